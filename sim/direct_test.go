package sim_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"

	"pgregory.net/rapid"

	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// The differential test of the direct path (sim/internal/qp/direct.go,
// docs/transport.md "The direct path"): random workloads on one to three
// RC or UC pairs run on two fabrics built alike, one with the direct path and
// one forced through the engine's events, and every observation must be
// the same after every step: what each verb returned, every field of
// every completion polled or still queued, the memory of every buffer, QP
// states, attributes and counters, CQ arm and overrun state and counters,
// channel and async events, the virtual clock, the engine's pending and
// future events, its counters and its sequence numbers.

// dEnd is one side of a pair in a differential world.
type dEnd struct {
	ctx    *sim.Context
	pd     *sim.PD
	ch     *sim.CompChannel
	scq    *sim.CQ
	rcq    *sim.CQ
	buf    []byte
	mr     *sim.MR // every access
	lbuf   []byte
	local  *sim.MR // local access only: its rkey is refused
	q      *sim.QP
	device int
	// bounce holds the inline payloads of an end whose MRs cover
	// another process's memory, as the daemon copies what a program
	// sends inline (a payload is read at post, from any mapped memory).
	bounce *sim.MR
	bbuf   []byte
}

// dShape is what both worlds are built from.
type dShape struct {
	profile  int
	pairs    int
	loopback []bool              // pair i has both ends on device a
	sharedCQ []bool              // end j uses one CQ for both queues
	oneCQ    []bool              // a loopback pair i whose two ends share the first end's send CQ
	oneMem   []bool              // a loopback pair i whose two ends share the first end's PD, buffers and MRs: source and target overlap
	access   []verbs.AccessFlags // pair i's qp_access_flags
	uc       []bool              // pair i is UC, not RC
	cqe      []int
	mtu      verbs.MTU
	timeout  uint8
	rnrRetry uint8
	retry    uint8
	rdAtomic uint8
	clean    bool // no bad keys, no forced errors, receives that fit
	random   bool // the Random schedule
	roce     int  // 0 InfiniBand devices, 1 RoCE with IPv6 GIDs, 2 RoCE with IPv4-mapped GIDs
	seed     uint64
	mode     sim.Mode
}

// dWorld is one fabric of the test.
type dWorld struct {
	ext  bool // MRs over "another process's" memory (newDWorldMem)
	f    *sim.Fabric
	conn []sim.ConnectOptions // pair i's
	ends []*dEnd              // pair i is ends[2i], ends[2i+1]
}

const dBuf = 4096

// directProfiles are the profiles the direct path is compared under: those
// with UC QPs, the work request builder and atomics, which the worlds use.
func directProfiles() []sim.Profile {
	return sim.ProfilesWithout(verbs.ReadingNoUC, verbs.ReadingNoQPEx, verbs.ReadingNoAtomics, verbs.ReadingNoImmData)
}

// sliceMem is memory of "another process" for an MR registered through
// simhook.RegExternalMR: buf, at address base.
type sliceMem struct {
	base uint64
	buf  []byte
}

func (m *sliceMem) ReadLocked(dst []byte, addr uint64) {
	copy(dst, m.buf[addr-m.base:])
}

func (m *sliceMem) WriteLocked(src []byte, addr uint64) {
	copy(m.buf[addr-m.base:], src)
}

// regExt registers buf as memory of another process (the daemon's MRs)
// at a made-up address that differs from buf's in every world.
func regExt(pd *sim.PD, buf []byte, base uint64, access verbs.AccessFlags) (*sim.MR, error) {
	mr, err := simhook.RegExternalMR(pd, &sliceMem{base: base, buf: buf}, base, uint64(len(buf)), base, access)
	if err != nil {
		return nil, err
	}
	return mr.(*sim.MR), nil
}

func newDWorld(t fataler, s dShape, direct bool) *dWorld { return newDWorldMem(t, s, direct, false) }

// newDWorldMem is newDWorld whose MRs, with ext, cover memory of another
// process (an Extern), as the per-host daemon's do.
func newDWorldMem(t fataler, s dShape, direct, ext bool) *dWorld {
	prof := directProfiles()[s.profile]
	cfg := sim.Config{Profile: prof, Devices: []sim.DeviceConfig{{Name: "a"}, {Name: "b"}}, Seed: s.seed, Mode: s.mode}
	if s.roce != 0 {
		// Every path is global: the requests and answers carry GRHs whose
		// GIDs the direct path checks as the engine does (XFER-35).
		for i := range cfg.Devices {
			pc := sim.PortConfig{Attr: verbs.PortAttr{LinkLayer: verbs.LinkLayerEthernet}}
			if s.roce == 2 {
				pc.GIDs = []verbs.GID{{10: 0xff, 11: 0xff, 12: 10, 15: byte(i + 1)}}
			}
			cfg.Devices[i].Ports = []sim.PortConfig{pc}
		}
	}
	if s.random {
		cfg.Schedule = sim.Random
	}
	f, err := sim.NewFabric(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A set-up failure closes the fabric: in a synctest bubble its clock
	// goroutine would otherwise run on in the bubble's fake time for ever.
	built := false
	defer func() {
		if !built {
			f.Close()
		}
	}()
	sim.SetDirect(f, direct)
	w := &dWorld{f: f, ext: ext}
	ctxs := map[int]*sim.Context{}
	for i := range 2 * s.pairs {
		dev := i % 2
		if s.loopback[i/2] {
			dev = 0
		}
		c := ctxs[dev]
		if c == nil {
			if c, err = f.Devices()[dev].Open(); err != nil {
				t.Fatal(err)
			}
			ctxs[dev] = c
		}
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		shared := i%2 == 1 && s.loopback[i/2] && s.oneMem[i/2]
		e := &dEnd{ctx: c, device: dev}
		if shared {
			p := w.ends[i-1]
			e.pd, e.buf, e.lbuf, e.mr, e.local = p.pd, p.buf, p.lbuf, p.mr, p.local
		} else {
			e.buf, e.lbuf = make([]byte, dBuf), make([]byte, 256)
			for k := range e.buf {
				e.buf[k] = byte(i*31 + k)
			}
			e.pd, err = c.AllocPD()
			must(err)
		}
		e.ch, err = c.CreateCompChannel()
		must(err)
		first := i%2 == 1 && s.loopback[i/2] && s.oneCQ[i/2]
		if first {
			// One CQ for all four queues of the pair, and one channel.
			e.ch, e.scq = w.ends[i-1].ch, w.ends[i-1].scq
		} else {
			e.scq, err = c.CreateCQ(s.cqe[i], nil, e.ch, 0)
			must(err)
		}
		e.rcq = e.scq
		if !s.sharedCQ[i] && !first {
			e.rcq, err = c.CreateCQ(s.cqe[i], nil, e.ch, 0)
			must(err)
		}
		if !shared && ext {
			base := uint64(0x7f00_0000_0000 + i<<20)
			e.mr, err = regExt(e.pd, e.buf, base, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
			must(err)
			e.local, err = regExt(e.pd, e.lbuf, base+dBuf, verbs.AccessLocalWrite)
			must(err)
			e.bbuf = make([]byte, dBuf)
			e.bounce, err = e.pd.RegMR(e.bbuf, 0)
			must(err)
		} else if shared && ext {
			e.bbuf = make([]byte, dBuf)
			e.bounce, err = e.pd.RegMR(e.bbuf, 0)
			must(err)
		} else if !shared {
			e.mr, err = e.pd.RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic)
			must(err)
			e.local, err = e.pd.RegMR(e.lbuf, verbs.AccessLocalWrite)
			must(err)
		}
		typ := verbs.QPTypeRC
		if s.uc[i/2] {
			typ = verbs.QPTypeUC
		}
		e.q, err = e.pd.CreateQP(sim.QPInitAttr{SendCQ: e.scq, RecvCQ: e.rcq, Type: typ,
			Cap:      verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 64},
			CompMask: sim.QPInitPD | sim.QPInitSendOpsFlags, SendOpsFlags: verbs.SupportedSendOps(typ, prof.Readings)})
		must(err)
		w.ends = append(w.ends, e)
	}
	for p := range s.pairs {
		o := sim.ConnectOptions{PathMTU: s.mtu, Timeout: s.timeout, RNRRetry: s.rnrRetry, RetryCnt: s.retry,
			MinRNRTimer: 1, RDAtomic: s.rdAtomic, NoDefaults: true,
			Access: s.access[p]}
		if s.uc[p] {
			o.Access &= verbs.AccessRemoteWrite
		}
		w.conn = append(w.conn, o)
		if err := sim.Connect(w.ends[2*p].q, w.ends[2*p+1].q, o); err != nil {
			t.Fatal(err)
		}
	}
	built = true
	return w
}

// dSGE is one local SGE of an action, by buffer and offset.
type dSGE struct {
	local bool // in the local-access MR
	bad   bool // a wrong lkey
	off   int
	n     int
}

// dAction is one step of a workload, drawn once and applied to both worlds.
type dAction struct {
	kind      int
	end       int
	op        verbs.WROpcode
	flags     verbs.SendFlags
	sges      []dSGE
	remoteOff int
	badRKey   int // 0 good, 1 the local-only MR's rkey, 2 a made-up key
	imm       uint32
	n         int
	solicited bool
	tick      uint64
	two       bool // post a second WR in the same call
	prepost   bool // post a receive on the peer first
	builder   bool // post through ibv_wr_start .. ibv_wr_complete
}

func (a dAction) String() string {
	return fmt.Sprintf("%+v", struct {
		Kind, End int
		Op        verbs.WROpcode
		Flags     verbs.SendFlags
		SGEs      []dSGE
		ROff, Bad int
		N         int
		Tick      uint64
		Two       bool
	}{a.kind, a.end, a.op, a.flags, a.sges, a.remoteOff, a.badRKey, a.n, a.tick, a.two})
}

const (
	actSend = iota
	actRecv
	actPoll
	actArm
	actEvent
	actAsync
	actError
	actTick
	actReconnect
	actFaults
	actForce
	actPort
)

func drawAction(t *rapid.T, ends int, clean bool) dAction {
	// rare draws an event of probability 1/n, never in a clean workload.
	rare := func(n int, label string) bool { return !clean && rapid.IntRange(0, n-1).Draw(t, label) == 0 }
	a := dAction{
		kind: rapid.SampledFrom([]int{actSend, actSend, actSend, actSend, actSend, actRecv, actRecv, actRecv, actRecv,
			actPoll, actPoll, actPoll, actPoll, actArm, actEvent, actAsync, actError, actTick, actTick, actReconnect, actReconnect, actReconnect, actFaults, actForce, actPort}).Draw(t, "kind"),
		end: rapid.IntRange(0, ends-1).Draw(t, "end"),
	}
	switch a.kind {
	case actSend:
		a.op = rapid.SampledFrom([]verbs.WROpcode{verbs.WRSend, verbs.WRSend, verbs.WRSendWithImm, verbs.WRRDMAWrite,
			verbs.WRRDMAWriteWithImm, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd}).Draw(t, "op")
		a.flags = verbs.SendFlags(rapid.SampledFrom([]uint32{0, uint32(verbs.SendSignaled), uint32(verbs.SendSignaled),
			uint32(verbs.SendSignaled | verbs.SendSolicited), uint32(verbs.SendSignaled | verbs.SendInline), uint32(verbs.SendInline),
			uint32(verbs.SendFence | verbs.SendSignaled)}).Draw(t, "flags"))
		// Sizes of several packets at the small MTUs drawShape picks
		// (256, 512, 1024): multi-packet messages, some longer than the
		// receive WRs hold.
		size := rapid.SampledFrom([]int{0, 1, 8, 8, 64, 100, 256, 300, 700, 1024, 1500, 2048, 3000}).Draw(t, "size")
		if a.op == verbs.WRAtomicCmpAndSwp || a.op == verbs.WRAtomicFetchAndAdd {
			size = 8
			if rare(6, "atomic size 4") {
				size = 4
			}
		}
		nsge := rapid.IntRange(1, 3).Draw(t, "nsge")
		if size == 0 {
			nsge = rapid.IntRange(0, 1).Draw(t, "nsge0")
		}
		left := size
		for i := range nsge {
			n := left
			if i < nsge-1 {
				n = rapid.IntRange(0, left).Draw(t, "split")
			}
			left -= n
			s := dSGE{n: n}
			s.local = rapid.IntRange(0, 9).Draw(t, "in local MR") == 0 && n <= 128
			s.bad = rare(30, "bad lkey")
			lim := dBuf
			if s.local {
				lim = 256
			}
			s.off = rapid.IntRange(0, lim-n).Draw(t, "off")
			if a.op == verbs.WRAtomicCmpAndSwp || a.op == verbs.WRAtomicFetchAndAdd {
				s.off &^= 7
			}
			a.sges = append(a.sges, s)
		}
		a.remoteOff = rapid.IntRange(0, dBuf-size).Draw(t, "remote off")
		if a.op == verbs.WRAtomicCmpAndSwp || a.op == verbs.WRAtomicFetchAndAdd {
			if !rare(10, "misaligned") {
				a.remoteOff &^= 7
			}
		}
		if rare(8, "bad rkey") {
			a.badRKey = rapid.IntRange(1, 2).Draw(t, "which bad rkey")
		}
		a.imm = rapid.Uint32().Draw(t, "imm")
		a.two = rapid.IntRange(0, 7).Draw(t, "two") == 0
		a.prepost = clean && rapid.IntRange(0, 3).Draw(t, "prepost") != 0
		a.builder = rapid.IntRange(0, 3).Draw(t, "builder") == 0
	case actRecv:
		a.n = rapid.IntRange(1, 4).Draw(t, "recvs")
		size := 1024
		if !clean {
			size = rapid.SampledFrom([]int{0, 16, 700, 1024, 1024, 1024}).Draw(t, "recv size")
		}
		off := rapid.IntRange(0, dBuf-size).Draw(t, "recv off")
		a.sges = []dSGE{{off: off, n: size}}
		if size > 1 && rapid.Bool().Draw(t, "two sges") {
			a.sges = []dSGE{{off: off, n: size / 2}, {off: rapid.IntRange(0, dBuf-size).Draw(t, "off2"), n: size - size/2}}
		}
		a.sges[0].bad = rare(30, "bad recv lkey")
	case actPoll:
		a.n = rapid.IntRange(1, 8).Draw(t, "poll")
		a.two = rapid.Bool().Draw(t, "recv cq")
	case actArm:
		a.solicited = rapid.Bool().Draw(t, "solicited only")
		a.two = rapid.Bool().Draw(t, "recv cq")
	case actError:
		if clean || rapid.IntRange(0, 3).Draw(t, "really") != 0 {
			a.kind = actPoll
			a.n = 1
		}
	case actForce:
		// A forced error status on the next completion of a receive WR
		// (the first of an actRecv, or a prepost's) or, rarely, fatal.
		if clean {
			a.kind, a.n = actPoll, 1
			break
		}
		a.n = rapid.IntRange(0, 2).Draw(t, "force")
	case actFaults:
		// Faults on (the engine path only) or off again, with delayed
		// packets perhaps still due.
		a.n = max(0, rapid.IntRange(-2, 2).Draw(t, "faults"))
	case actPort:
		// The end's port down (and its traffic with it) or up again: what
		// the direct path's cached route must notice (DirectCache).
		if clean {
			a.kind, a.n = actPoll, 1
			break
		}
		a.n = rapid.IntRange(0, 1).Draw(t, "port up")
	case actTick:
		a.tick = rapid.SampledFrom([]uint64{0, 1, 10_000, 100_000, 1 << 22, 1 << 26}).Draw(t, "tick")
	}
	return a
}

func (w *dWorld) sgeList(e *dEnd, ss []dSGE) []verbs.SGE {
	out := make([]verbs.SGE, len(ss))
	for i, s := range ss {
		mr := e.mr
		if s.local {
			mr = e.local
		}
		out[i] = verbs.SGE{Addr: mr.Addr() + uint64(s.off), Length: uint32(s.n), LKey: mr.LKey()}
		if s.bad {
			out[i].LKey ^= 0x5a00
		}
	}
	return out
}

// bounced copies the bytes an inline request's SGEs name into e's bounce
// MR and returns one SGE naming the copy, as the daemon posts a program's
// inline payload.
func (w *dWorld) bounced(e *dEnd, ss []dSGE) []verbs.SGE {
	n := 0
	for _, s := range ss {
		src := e.buf
		if s.local {
			src = e.lbuf
		}
		n += copy(e.bbuf[n:], src[s.off:s.off+s.n])
	}
	if n == 0 {
		return nil
	}
	return []verbs.SGE{{Addr: e.bounce.Addr(), Length: uint32(n), LKey: e.bounce.LKey()}}
}

// apply runs a on w and describes what the verbs returned.
func (w *dWorld) apply(a dAction) string {
	e := w.ends[a.end]
	peer := w.ends[a.end^1]
	switch a.kind {
	case actSend:
		wr := verbs.SendWR{WRID: uint64(a.end)<<32 | uint64(a.imm&0xffff), Opcode: a.op, Flags: a.flags,
			SGList: w.sgeList(e, a.sges), Imm: a.imm, RemoteAddr: peer.mr.Addr() + uint64(a.remoteOff),
			RKey: peer.mr.RKey(), CompareAdd: uint64(a.imm) * 3, Swap: uint64(a.imm) ^ 0xfeed}
		switch a.badRKey {
		case 1:
			wr.RKey = peer.local.RKey()
		case 2:
			wr.RKey ^= 0x3c0000
		}
		plain := wr.SGList
		if w.ext && wr.Flags&verbs.SendInline != 0 {
			wr.SGList = w.bounced(e, a.sges)
		}
		pre := ""
		if a.prepost {
			r := verbs.RecvWR{WRID: 7, SGList: []verbs.SGE{{Addr: peer.mr.Addr() + 1024, Length: 2048, LKey: peer.mr.LKey()}}}
			n, err := peer.q.PostRecv([]verbs.RecvWR{r})
			pre = fmt.Sprintf("post_recv %d %v, ", n, verr.Errno(err))
		}
		wrs := []verbs.SendWR{wr}
		if a.two {
			wr2 := wr
			wr2.SGList = plain
			wr2.WRID++
			wr2.Opcode = verbs.WRSend
			wr2.Flags = verbs.SendSignaled
			wrs = append(wrs, wr2)
		}
		if a.builder {
			return pre + fmt.Sprintf("wr_complete %v", verr.Errno(build(e.q, wrs)))
		}
		n, err := e.q.PostSend(wrs)
		return fmt.Sprintf("%spost_send %d %v", pre, n, verr.Errno(err))
	case actRecv:
		rs := make([]verbs.RecvWR, a.n)
		for i := range rs {
			rs[i] = verbs.RecvWR{WRID: uint64(a.end)<<32 | uint64(1000+i), SGList: w.sgeList(e, a.sges)}
		}
		n, err := e.q.PostRecv(rs)
		return fmt.Sprintf("post_recv %d %v", n, verr.Errno(err))
	case actPoll:
		c := e.scq
		if a.two {
			c = e.rcq
		}
		out := make([]verbs.WC, a.n)
		n, err := c.Poll(out)
		if n < 0 {
			n = 0
		}
		return fmt.Sprintf("poll %d %v %+v", n, verr.Errno(err), out[:n])
	case actArm:
		c := e.scq
		if a.two {
			c = e.rcq
		}
		return fmt.Sprintf("arm %v", verr.Errno(c.ReqNotify(a.solicited)))
	case actEvent:
		c, _, err := e.ch.TryGetEvent()
		s := fmt.Sprintf("event %v", verr.Errno(err))
		if c != nil {
			s += fmt.Sprintf(" scq=%v rcq=%v", c == e.scq, c == e.rcq)
			if err := c.AckEvents(1); err != nil {
				s += " ack " + err.Error()
			}
		}
		return s
	case actAsync:
		ev, err := e.ctx.TryGetAsyncEvent()
		s := fmt.Sprintf("async %v", verr.Errno(err))
		if err == nil {
			s += " " + ev.String()
			if err := ev.Ack(); err != nil {
				s += " ack " + err.Error()
			}
		}
		return s
	case actError:
		return fmt.Sprintf("modify ERR %v", verr.Errno(e.q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)))
	case actReconnect:
		// Both QPs of the pair back to RESET and connected again.
		x, y := w.ends[a.end&^1], w.ends[a.end|1]
		s := ""
		for _, q := range []*sim.QP{x.q, y.q} {
			s += fmt.Sprintf(" reset %v", verr.Errno(q.Modify(&verbs.QPAttr{QPState: verbs.QPStateReset}, verbs.QPAttrState)))
		}
		return s + fmt.Sprintf(" connect %v", verr.Errno(sim.Connect(x.q, y.q, w.conn[a.end/2])))
	case actForce:
		id := []uint64{uint64(a.end)<<32 | 1000, 7, 0}[a.n]
		if a.n == 2 {
			return fmt.Sprintf("fatal %v", verr.Errno(w.f.InjectFatal(e.q)))
		}
		return fmt.Sprintf("force %v", verr.Errno(w.f.ForceStatus(e.q, id, true, verbs.WCLocLenErr)))
	case actFaults:
		x := sim.Faults{}
		switch a.n {
		case 1:
			x = sim.Faults{Delay: 0.5, MaxDelay: 50_000}
		case 2:
			x = sim.Faults{Drop: 0.1, Duplicate: 0.2, Delay: 0.2}
		}
		return fmt.Sprintf("faults %v", verr.Errno(w.f.SetFaults(x)))
	case actPort:
		return fmt.Sprintf("port up=%v %v", a.n == 1, verr.Errno(w.f.Devices()[e.device].SetPortState(1, a.n == 1)))
	case actTick:
		if a.tick == 0 {
			return fmt.Sprintf("advance %v", w.f.AdvanceToNext())
		}
		w.f.Tick(a.tick)
		return "tick"
	}
	return ""
}

// build posts wrs through the work request builder.
func build(q *sim.QP, wrs []verbs.SendWR) error {
	q.WRStart()
	for _, w := range wrs {
		q.SetWRID(w.WRID)
		q.SetWRFlags(w.Flags)
		switch w.Opcode {
		case verbs.WRSend:
			q.WRSend()
		case verbs.WRSendWithImm:
			q.WRSendImm(w.Imm)
		case verbs.WRRDMAWrite:
			q.WRRDMAWrite(w.RKey, w.RemoteAddr)
		case verbs.WRRDMAWriteWithImm:
			q.WRRDMAWriteImm(w.RKey, w.RemoteAddr, w.Imm)
		case verbs.WRRDMARead:
			q.WRRDMARead(w.RKey, w.RemoteAddr)
		case verbs.WRAtomicCmpAndSwp:
			q.WRAtomicCmpSwp(w.RKey, w.RemoteAddr, w.CompareAdd, w.Swap)
		case verbs.WRAtomicFetchAndAdd:
			q.WRAtomicFetchAdd(w.RKey, w.RemoteAddr, w.CompareAdd)
		}
		q.WRSetSGEList(w.SGList)
	}
	return q.WRComplete()
}

// observe describes everything a program or a test could read of w.
func (w *dWorld) observe() string {
	var b bytes.Buffer
	ready, future := w.f.Pending()
	seq, _ := sim.EngineSeq(w.f)
	fmt.Fprintf(&b, "now=%d pending=%d/%d seq=%d stats=%+v future=%v\n", w.f.Now(), ready, future, seq, w.f.Stats(), w.f.Future())
	for i, e := range w.ends {
		s, r := e.q.Outstanding()
		attr, _, err := e.q.Query(verbs.QueryableQPAttrs)
		fmt.Fprintf(&b, "end %d: %v out=%d/%d stats=%+v attr=%+v %v\n", i, e.q.State(), s, r, e.q.Stats(), attr, err)
		fmt.Fprintf(&b, "  scq=%+v\n", e.scq.Snapshot())
		if e.rcq != e.scq {
			fmt.Fprintf(&b, "  rcq=%+v\n", e.rcq.Snapshot())
		}
		fmt.Fprintf(&b, "  chan=%d async=%v\n", e.ch.Len(), e.ctx.PendingAsyncEvents())
		read, acked := e.ctx.AsyncEventCounts()
		fmt.Fprintf(&b, "  async read=%d acked=%d buf=%x lbuf=%x\n", read, acked, e.buf, e.lbuf)
	}
	return b.String()
}

func drawShape(t *rapid.T) dShape {
	s := dShape{
		profile:  rapid.IntRange(0, len(directProfiles())-1).Draw(t, "profile"),
		pairs:    rapid.IntRange(1, 3).Draw(t, "pairs"),
		mtu:      rapid.SampledFrom([]verbs.MTU{verbs.MTU256, verbs.MTU256, verbs.MTU512, verbs.MTU1024}).Draw(t, "mtu"),
		timeout:  rapid.SampledFrom([]uint8{0, 8, 14}).Draw(t, "timeout"),
		rnrRetry: rapid.SampledFrom([]uint8{0, 1, 7, 7}).Draw(t, "rnr retry"),
		retry:    rapid.SampledFrom([]uint8{0, 2, 7}).Draw(t, "retry"),
		rdAtomic: rapid.SampledFrom([]uint8{0, 1, 4, 4}).Draw(t, "rd atomic"),
		clean:    rapid.Bool().Draw(t, "clean"),
		random:   rapid.Bool().Draw(t, "random schedule"),
		roce:     rapid.SampledFrom([]int{0, 0, 0, 0, 1, 2}).Draw(t, "roce"),
		seed:     rapid.Uint64().Draw(t, "seed"),
	}
	if s.clean {
		s.rnrRetry, s.rdAtomic = 7, 4
		for i := range s.access {
			s.access[i] = verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
		}
	}
	for range s.pairs {
		s.loopback = append(s.loopback, rapid.IntRange(0, 3).Draw(t, "loopback") == 0)
		s.oneCQ = append(s.oneCQ, rapid.Bool().Draw(t, "one cq"))
		s.oneMem = append(s.oneMem, rapid.Bool().Draw(t, "one memory"))
		s.uc = append(s.uc, rapid.IntRange(0, 3).Draw(t, "uc") == 0)
		all := verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
		s.access = append(s.access, rapid.SampledFrom([]verbs.AccessFlags{all, all, all,
			verbs.AccessRemoteWrite, verbs.AccessRemoteRead | verbs.AccessRemoteAtomic, 0}).Draw(t, "access"))
	}
	for range 2 * s.pairs {
		s.sharedCQ = append(s.sharedCQ, rapid.Bool().Draw(t, "shared cq"))
		s.cqe = append(s.cqe, rapid.SampledFrom([]int{1, 2, 3, 16, 64, 64}).Draw(t, "cqe"))
	}
	return s
}

// TestDirectMatchesEngine is the differential test of the direct path.
func TestDirectMatchesEngine(t *testing.T) { testDirectMatchesEngine(t, sim.Auto) }

// TestDirectMatchesEngineBackground is TestDirectMatchesEngine in
// Background mode, in a synctest bubble: the bubble's clock, which the
// fabrics' goroutines follow, stands still while the test goroutine runs,
// so virtual time moves only through the workload's ticks, in both worlds
// alike.
func TestDirectMatchesEngineBackground(t *testing.T) { testDirectMatchesEngine(t, sim.Background) }

func testDirectMatchesEngine(t *testing.T, mode sim.Mode) {
	var directs, multi, engineDirects uint64
	rapid.Check(t, func(rt *rapid.T) {
		s := drawShape(rt)
		s.mode = mode
		acts := make([]dAction, rapid.IntRange(30, 150).Draw(rt, "steps"))
		for i := range acts {
			acts[i] = drawAction(rt, 2*s.pairs, s.clean)
		}
		var msg string
		var nd, nm, ng uint64
		if mode == sim.Background {
			synctest.Test(t, func(t *testing.T) { msg, nd, nm, ng = runDiff(t, s, acts) })
		} else {
			msg, nd, nm, ng = runDiff(rt, s, acts)
		}
		if msg != "" {
			rt.Fatal(msg)
		}
		directs += nd
		multi += nm
		engineDirects += ng
	})
	if engineDirects != 0 {
		t.Errorf("the fabric forced through the engine carried out %d messages directly", engineDirects)
	}
	if directs == 0 {
		t.Error("no message took the direct path: the test compares nothing")
	}
	if multi == 0 {
		t.Error("no message of several packets took the direct path")
	}
	t.Logf("%d messages carried out directly, %d of several packets", directs, multi)
}

// fataler is *testing.T or *rapid.T.
type fataler interface{ Fatal(args ...any) }

// runDiff runs acts on two worlds of shape s, one with the direct path and
// one without, and describes the first difference (empty when there is
// none); it returns how many messages each carried out directly.
func runDiff(t fataler, s dShape, acts []dAction) (diff string, directs, multi, engineDirects uint64) {
	d := newDWorld(t, s, true)
	defer d.f.Close()
	g := newDWorld(t, s, false)
	defer g.f.Close()
	// The third world's MRs cover memory of "another process", as the
	// per-host daemon's do (qp.Extern): everything must be the same
	// again, on either path.
	x := newDWorldMem(t, s, s.seed%2 == 0, true)
	defer x.f.Close()
	if od, og := d.observe(), g.observe(); od != og {
		return fmt.Sprintf("the worlds differ from the start:\n%s\n%s", od, og), 0, 0, 0
	}
	for i, a := range acts {
		rd, rg, rx := d.apply(a), g.apply(a), x.apply(a)
		if rd != rg {
			return fmt.Sprintf("step %d %v: direct: %s\nengine: %s", i, a, rd, rg), 0, 0, 0
		}
		if rd != rx {
			return fmt.Sprintf("step %d %v: direct: %s\nexternal memory: %s", i, a, rd, rx), 0, 0, 0
		}
		od, og, ox := d.observe(), g.observe(), x.observe()
		if od != og {
			return fmt.Sprintf("step %d %v (%s):\n%s", i, a, rd, diffLines(od, og)), 0, 0, 0
		}
		if od != ox {
			return fmt.Sprintf("step %d %v (%s), against external memory:\n%s", i, a, rd, diffLines(od, ox)), 0, 0, 0
		}
	}
	_, directs = sim.EngineSeq(d.f)
	_, engineDirects = sim.EngineSeq(g.f)
	return "", directs, sim.EngineDirectMulti(d.f), engineDirects
}

// diffLines shows the lines of a and b that differ.
func diffLines(a, b string) string {
	la, lb := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	var out bytes.Buffer
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !reflect.DeepEqual(x, y) {
			fmt.Fprintf(&out, "direct: %s\nengine: %s\n", x, y)
		}
	}
	return out.String()
}
