package sim_test

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func TestAllocMW_MW01(t *testing.T) {
	f, err := sim.NewFabric(sim.Config{Devices: []sim.DeviceConfig{{Name: "a", Attr: func() verbs.DeviceAttr {
		a := sim.DefaultDeviceAttr()
		a.MaxMW = 2
		return a
	}()}}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := f.Device("a")
	ctx, _ := d.Open()
	pd, _ := ctx.AllocPD()
	if a := d.Attr(); a.MaxMW != 2 || a.DeviceCapFlags&(verbs.DeviceMemWindow|verbs.DeviceMemWindow2B) != verbs.DeviceMemWindow|verbs.DeviceMemWindow2B {
		t.Errorf("attr max_mw %d caps %#x", a.MaxMW, uint32(a.DeviceCapFlags))
	}
	for _, typ := range []verbs.MWType{0, 3, 0xffffffff} {
		if _, err := pd.AllocMW(typ); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("AllocMW(%v) = %v, want EINVAL", typ, err)
		}
	}
	m1, err := pd.AllocMW(verbs.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := pd.AllocMW(verbs.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	if m1.RKey() == 0 || m1.RKey()>>8 == m2.RKey()>>8 || m1.Type() != verbs.MWType1 || m2.PD() != pd || m1.Bound() {
		t.Errorf("rkeys %#x %#x", m1.RKey(), m2.RKey())
	}
	if _, err := pd.AllocMW(verbs.MWType1); !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("third MW: %v, want ENOMEM", err)
	}
	if err := pd.Dealloc(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("dealloc PD with MWs: %v, want EBUSY (PD-02)", err)
	}
	if err := m1.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := m1.Dealloc(); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("second dealloc: %v", err)
	}
	if err := m2.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Errorf("dealloc PD after the MWs: %v", err)
	}
}

// mwEnd gives b an MR with MW_BIND over its buffer.
func mwSetup(t *testing.T) (*end, *end, *sim.MR) {
	t.Helper()
	_, a, b := rcPair(t, sim.Config{}, sim.ConnectOptions{PathMTU: verbs.MTU1024})
	mr, err := b.pd.RegMR(b.buf[4096:8192], verbs.AccessLocalWrite|verbs.AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	return a, b, mr
}

func TestBindType1_MW04(t *testing.T) {
	a, b, mr := mwSetup(t)
	mw, err := b.pd.AllocMW(verbs.MWType1)
	if err != nil {
		t.Fatal(err)
	}
	old := mw.RKey()
	if err := b.q.BindMW(mw, 5, verbs.SendSignaled, verbs.MWBindInfo{MR: mr, Addr: mr.Addr() + 100, Length: 200, Access: verbs.AccessRemoteWrite | verbs.AccessRemoteRead}); err != nil {
		t.Fatal(err)
	}
	if mw.RKey() == old || mw.RKey()>>8 != old>>8 {
		t.Errorf("rkey %#x after bind, was %#x", mw.RKey(), old)
	}
	if w := b.poll(t, 1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCBindMW || w.WRID != 5 {
		t.Fatalf("bind WC %v", &w)
	}
	if err := mr.Dereg(); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("dereg with a bound window: %v, want EBUSY (MR-06)", err)
	}
	copy(a.buf, "window!!")
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: mr.Addr() + 100, RKey: mw.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess {
		t.Fatalf("write through the window: %v", &w)
	}
	if string(b.buf[4196:4204]) != "window!!" {
		t.Errorf("bytes %q", b.buf[4196:4204])
	}
	// One byte past the window: REM_ACCESS_ERR.
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMAWrite, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: mr.Addr() + 293, RKey: mw.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRemAccessErr {
		t.Fatalf("write past the window: %v", &w)
	}
	if err := mw.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Dereg(); err != nil {
		t.Errorf("dereg after the window's dealloc: %v", err)
	}
}

func TestBindType2AndInvalidate_MW07(t *testing.T) {
	a, b, mr := mwSetup(t)
	mw, err := b.pd.AllocMW(verbs.MWType2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.q.BindMW(mw, 1, 0, verbs.MWBindInfo{MR: mr, Length: 8}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BindMW of a type 2 window: %v, want EINVAL", err)
	}
	key := mw.RKey()&^0xff | 0x42
	bind := verbs.SendWR{WRID: 3, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, MW: mw, RKey: key,
		Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr(), Length: 64, Access: verbs.AccessRemoteRead | verbs.AccessZeroBased}}
	if _, err := b.q.PostSend([]verbs.SendWR{bind}); err != nil {
		t.Fatal(err)
	}
	if w := b.poll(t, 1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCBindMW || mw.RKey() != key {
		t.Fatalf("bind WC %v, rkey %#x", &w, mw.RKey())
	}
	copy(b.buf[4096+10:], "zero-based")
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 10)}, RemoteAddr: 10, RKey: key}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCSuccess || string(a.buf[:10]) != "zero-based" {
		t.Fatalf("read through the window: %v %q", &w, a.buf[:10])
	}
	if _, err := b.q.PostSend([]verbs.SendWR{{WRID: 4, Opcode: verbs.WRLocalInv, Flags: verbs.SendSignaled, Imm: key}}); err != nil {
		t.Fatal(err)
	}
	if w := b.poll(t, 1)[0]; w.Status != verbs.WCSuccess || w.Opcode != verbs.WCLocalInv {
		t.Fatalf("local inv WC %v", &w)
	}
	if err := mr.Dereg(); err != nil {
		t.Errorf("dereg after invalidation: %v", err)
	}
	if _, err := a.q.PostSend([]verbs.SendWR{{WRID: 2, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
		SGList: []verbs.SGE{a.sge(0, 10)}, RemoteAddr: 10, RKey: key}}); err != nil {
		t.Fatal(err)
	}
	if w := a.poll(t, 1)[0]; w.Status != verbs.WCRemAccessErr {
		t.Fatalf("read after the invalidation: %v", &w)
	}
}

// TestBindType2KeyByte_MW05: a type 2 bind takes only the low byte of the
// rkey the request names; the window keeps its index, as rxe_do_bind_mw and
// mlx5's set_umr_mkey_seg do. A small counter as the rkey binds, and the
// window answers to its index with that byte, not to the number asked for.
func TestBindType2KeyByte_MW05(t *testing.T) {
	for _, asked := range []uint32{17, 0xba, 1024, 0xffffff42} {
		t.Run(fmt.Sprintf("%#x", asked), func(t *testing.T) {
			a, b, mr := mwSetup(t)
			mw, err := b.pd.AllocMW(verbs.MWType2)
			if err != nil {
				t.Fatal(err)
			}
			want := mw.RKey()&^0xff | asked&0xff
			bind := verbs.SendWR{WRID: 3, Opcode: verbs.WRBindMW, Flags: verbs.SendSignaled, MW: mw, RKey: asked,
				Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr(), Length: 64, Access: verbs.AccessRemoteRead}}
			if _, err := b.q.PostSend([]verbs.SendWR{bind}); err != nil {
				t.Fatal(err)
			}
			if w := b.poll(t, 1)[0]; w.Status != verbs.WCSuccess || mw.RKey() != want || !mw.Bound() {
				t.Fatalf("bind with rkey %#x: WC %v, window rkey %#x (want %#x), bound %v", asked, &w, mw.RKey(), want, mw.Bound())
			}
			copy(b.buf[4096:], "lowbyte!")
			read := func(id uint64, key uint32) verbs.WC {
				t.Helper()
				if _, err := a.q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
					SGList: []verbs.SGE{a.sge(0, 8)}, RemoteAddr: mr.Addr(), RKey: key}}); err != nil {
					t.Fatal(err)
				}
				return a.poll(t, 1)[0]
			}
			if w := read(1, want); w.Status != verbs.WCSuccess || string(a.buf[:8]) != "lowbyte!" {
				t.Fatalf("READ through %#x: %v %q", want, &w, a.buf[:8])
			}
			if asked != want {
				if w := read(2, asked); w.Status != verbs.WCRemAccessErr {
					t.Errorf("READ through the rkey asked for, %#x: %v, want REM_ACCESS_ERR", asked, &w)
				}
			}
		})
	}
}

func TestBindErrors_MW05(t *testing.T) {
	cases := map[string]func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR{
		"MR without MW_BIND": func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRBindMW, MW: mw, RKey: mw.RKey() + 1, Bind: verbs.MWBindInfo{MR: plain, Addr: plain.Addr(), Length: 8}}
		},
		"range past the MR": func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRBindMW, MW: mw, RKey: mw.RKey() + 1, Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr() + 4000, Length: 97}}
		},
		"MW_BIND right": func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRBindMW, MW: mw, RKey: mw.RKey() + 1, Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr(), Length: 8, Access: verbs.AccessMWBind}}
		},
		"zero length": func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRBindMW, MW: mw, RKey: mw.RKey() + 1, Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr()}}
		},
		"no MW": func(mr, plain *sim.MR, mw *sim.MW) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.WRBindMW, RKey: mw.RKey() + 1, Bind: verbs.MWBindInfo{MR: mr, Addr: mr.Addr(), Length: 8}}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			_, b, mr := mwSetup(t)
			mw, err := b.pd.AllocMW(verbs.MWType2)
			if err != nil {
				t.Fatal(err)
			}
			wr := mk(mr, b.mr, mw)
			wr.WRID, wr.Flags = 9, verbs.SendSignaled
			if _, err := b.q.PostSend([]verbs.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			if w := b.poll(t, 1)[0]; w.Status != verbs.WCMWBindErr || w.WRID != 9 {
				t.Fatalf("WC %v, want MW_BIND_ERR", &w)
			}
			if mw.Bound() {
				t.Errorf("the window is bound after a failed bind")
			}
			if st := b.q.State(); st != verbs.QPStateErr {
				t.Errorf("QP in %v after MW_BIND_ERR", st)
			}
		})
	}
}
