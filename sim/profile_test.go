package sim_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// TestProfileByName: every built-in profile is found by its name, in the
// order Profiles lists them, and an unknown name is an error that lists
// the known ones.
func TestProfileByName(t *testing.T) {
	want := []string{"default", "rxe", "mlx5", "siw", "irdma"}
	if got := sim.ProfileNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ProfileNames() = %v, want %v", got, want)
	}
	for _, p := range sim.Profiles() {
		q, err := sim.ProfileByName(p.Name)
		if err != nil || q.Name != p.Name || q.Readings != p.Readings || q.Device != p.Device || q.Link != p.Link {
			t.Errorf("ProfileByName(%q) = %v, %v", p.Name, q, err)
		}
	}
	_, err := sim.ProfileByName("mlx4")
	if err == nil || !strings.Contains(err.Error(), `"mlx4" is not a profile`) || !strings.Contains(err.Error(), "default, rxe, mlx5, siw, irdma") {
		t.Errorf("ProfileByName(mlx4): %v", err)
	}
}

// TestProfileDevices: a fabric's devices configured without attributes take
// their profile's, minus what the readings take away, and its ports the
// profile's link layer; every built-in profile cites a source for each
// reading it sets.
func TestProfileDevices(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			f, err := sim.NewFabric(sim.Config{Profile: p})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d := f.Devices()[0]
			a := d.Attr()
			want := p.DeviceAttr()
			if a.VendorID != want.VendorID || a.MaxSGE != want.MaxSGE || a.MaxInline != want.MaxInline || a.MaxQPWR != want.MaxQPWR {
				t.Errorf("device attrs %+v, want the profile's %+v", a, want)
			}
			if p.NoAtomics != (a.AtomicCap == verbs.AtomicNone) {
				t.Errorf("NoAtomics %v, atomic_cap %v", p.NoAtomics, a.AtomicCap)
			}
			if p.NoMW != (a.MaxMW == 0 && a.DeviceCapFlags&verbs.DeviceMemWindow == 0) {
				t.Errorf("NoMW %v, max_mw %d, caps %#x", p.NoMW, a.MaxMW, a.DeviceCapFlags)
			}
			if p.NoSRQ != (a.MaxSRQ == 0) || p.NoUD != (a.MaxAH == 0) {
				t.Errorf("NoSRQ %v NoUD %v: max_srq %d max_ah %d", p.NoSRQ, p.NoUD, a.MaxSRQ, a.MaxAH)
			}
			ctx, err := d.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ctx.Close()
			pa, err := ctx.QueryPort(1)
			if err != nil {
				t.Fatal(err)
			}
			link := p.Link
			if link == verbs.LinkLayerUnspecified {
				link = verbs.LinkLayerInfiniBand
			}
			if pa.LinkLayer != link {
				t.Errorf("link layer %v, want %v", pa.LinkLayer, link)
			}
			if p.Name == "default" {
				return
			}
			for _, r := range p.On().List() {
				if p.Source(r) == "" {
					t.Errorf("%s sets %s without a source", p.Name, r)
				}
			}
		})
	}
}

// TestPortabilityRecordsPostBeforeRTS: a send posted in INIT is refused
// with EINVAL under the default profile, ENOMEM under mlx5, ENOTCONN
// under siw and accepted under irdma, and either way the
// fabric records that the outcome was the reading's (QP-26); the report
// names both sides. A run that posts only in RTS depends on nothing.
func TestPortabilityRecordsPostBeforeRTS(t *testing.T) {
	for _, p := range sim.Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			f, a, b := rcPair(t, sim.Config{Profile: p}, sim.ConnectOptions{})
			if rep := f.Portability(); !rep.Portable() {
				t.Fatalf("connecting a pair depended on:\n%v", rep)
			}
			// A fresh QP of a's PD, in INIT.
			q, err := a.pd.CreateQP(sim.QPInitAttr{SendCQ: a.cq, RecvCQ: a.cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
				t.Fatal(err)
			}
			_, err = q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRSend}})
			want := syscall.EINVAL
			switch {
			case p.PostAnyState:
				want = 0
			case p.PostENOTCONN:
				want = syscall.ENOTCONN
			case p.PostENOMEM:
				want = syscall.ENOMEM
			}
			if (want == 0) != (err == nil) || (want != 0 && !errors.Is(err, want)) {
				t.Fatalf("post in INIT: %v, want %v", err, want)
			}
			rep := f.Portability()
			if !f.ReadingsConsulted().Has(verbs.ReadingPostAnyState) || rep.Portable() {
				t.Fatalf("consulted %v; report:\n%v", f.ReadingsConsulted(), rep)
			}
			s := rep.String()
			for _, w := range []string{"QP-25, QP-26 (PostAnyState)", "irdma: a post before RTS", "default, rxe, mlx5, siw: a send posted before RTS", "<- this run"} {
				if !strings.Contains(s, w) {
					t.Errorf("report lacks %q:\n%s", w, s)
				}
			}
			_ = b
		})
	}
}

// TestPortabilityOfChangedReadings: a profile with readings changed on top
// of a built-in one is reported as its own, starred.
func TestPortabilityOfChangedReadings(t *testing.T) {
	p := sim.DefaultProfile()
	p.PostAnyState = true
	var set verbs.ReadingSet
	set.Add(verbs.ReadingPostAnyState)
	set.Add(verbs.ReadingExactCQE) // no built-in profile sets it, nor this one: no difference
	rep := sim.NewPortability(p, set)
	if rep.Profile != "default*" || len(rep.Differences) != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Differences[0]
	if !d.Used || strings.Join(d.On, " ") != "irdma default*" {
		t.Errorf("difference %+v", d)
	}
}

// TestPostBeforeRTSWaitsForDoorbell: under PostAnyState (irdma) sends
// posted in RESET wait: the move to RTS starts nothing, and the next post
// in RTS rings the doorbell, which runs them first, in order (QP-26 B).
// A receive posted in RESET is kept and takes the first message (QP-25 B).
func TestPostBeforeRTSWaitsForDoorbell(t *testing.T) {
	f, da, db := twoDevices(t, sim.Config{Profile: sim.IRDMAProfile()})
	a, b := newEnd(t, da, verbs.QPTypeRC, 4096), newEnd(t, db, verbs.QPTypeRC, 4096)
	if _, err := b.q.PostRecv([]verbs.RecvWR{{WRID: 100, SGList: []verbs.SGE{b.sge(0, 64)}}, {WRID: 101, SGList: []verbs.SGE{b.sge(64, 64)}}}); err != nil {
		t.Fatalf("post_recv in RESET: %v", err)
	}
	send := func(id uint64) []verbs.SendWR {
		return []verbs.SendWR{{WRID: id, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGList: []verbs.SGE{a.sge(0, 8)}}}
	}
	if _, err := a.q.PostSend(send(1)); err != nil {
		t.Fatalf("post_send in RESET: %v", err)
	}
	if err := sim.Connect(a.q, b.q, sim.ConnectOptions{}); err != nil {
		t.Fatal(err)
	}
	f.RunUntilIdle(1 << 30)
	if n, _ := a.cq.Poll(make([]verbs.WC, 4)); n != 0 {
		t.Fatalf("%d completions before any post in RTS, want none (no doorbell)", n)
	}
	if _, err := a.q.PostSend(send(2)); err != nil {
		t.Fatal(err)
	}
	got := a.poll(t, 2)
	if got[0].WRID != 1 || got[1].WRID != 2 || got[0].Status != verbs.WCSuccess || got[1].Status != verbs.WCSuccess {
		t.Errorf("send completions %v, %v; want wr_ids 1 then 2, both SUCCESS", &got[0], &got[1])
	}
	r := b.poll(t, 2)
	if r[0].WRID != 100 || r[1].WRID != 101 {
		t.Errorf("receive completions %d, %d; want 100, 101", r[0].WRID, r[1].WRID)
	}
}
