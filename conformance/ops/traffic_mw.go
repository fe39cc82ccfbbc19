package ops

import (
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/conformance/model"
	"github.com/verbsim/verbsim/verbs"
	"pgregory.net/rapid"
)

// This file adds memory windows to TrafficStateMachine (MW-01..MW-07):
// every RC QP's MR ends with exposedLen bytes that only windows reach; the
// machine allocates type 1 and type 2 windows in a QP's PD, binds them
// there (ibv_bind_mw, IBV_WR_BIND_MW) with random ranges and rights, some
// of them broken (past the MR, a right a window cannot grant, a type 2 key
// with another index, a type 2 window bound twice or with length 0),
// invalidates them (LOCAL_INV, the peer's SEND_WITH_INV), deallocates them,
// and has the peer WRITE, READ and CMP_AND_SWP / FETCH_AND_ADD through
// their current and stale keys, inside and outside their bounds. The
// traffic model (conformance/model, window.go) predicts every completion,
// what READs and atomics bring back, every window's rkey and the bytes of
// the exposed areas.

// exposedOff is where the exposed area starts in a QP's buffer.
const exposedOff = (sendRegions + recvRegions + targetRegions) * regionLen

// window is a memory window of the state machine.
type window struct {
	qp   int // the QP whose PD holds it; it is bound through that QP
	mw   verbs.MW
	idx  int // the model's index
	typ  verbs.MWType
	keys []uint32     // keys it reported, newest last: the older ones are stale
	bind model.MWBind // the last bind asked for, which says where accesses aim
	dead bool
}

// windowAccess is a WRITE, READ, atomic or SEND_WITH_INV aimed at a window.
type windowAccess struct {
	w *window
	n int // the length, or -1 to draw it as for any message
}

// liveMWs returns the live windows of QP i.
func (r *trafficRun) liveMWs(i int) []*window {
	var ws []*window
	for _, w := range r.mws {
		if w.qp == i && !w.dead {
			ws = append(ws, w)
		}
	}
	return ws
}

func (w *window) drawKey(t *rapid.T) uint32 {
	if len(w.keys) > 1 && rapid.IntRange(0, 4).Draw(t, "stale key") == 2 {
		return rapid.SampledFrom(w.keys[:len(w.keys)-1]).Draw(t, "key")
	}
	return w.keys[len(w.keys)-1]
}

// drawWinAccess now and then turns send request s of an RC QP into an
// access to a window of the peer: a WRITE, READ or atomic through one of
// its keys, or a SEND_WITH_INV of one. It returns nil otherwise.
func (r *trafficRun) drawWinAccess(t *rapid.T, peer int, s *model.Send) *windowAccess {
	ws := r.liveMWs(peer)
	var bound []*window
	for _, w := range ws {
		if _, ok := r.m.MWKey(w.idx); ok {
			bound = append(bound, w)
		}
	}
	if len(ws) == 0 || (len(bound) == 0 || rapid.Bool().Draw(t, "not")) && !rapid.Bool().Draw(t, "through a window") {
		return nil
	}
	// Mostly a bound window, through its current key; now and then one
	// that grants nothing (MW-01, MW-03, MW-07).
	unbound := rapid.Bool().Draw(t, "unbound") && rapid.Bool().Draw(t, "window")
	switch {
	case len(bound) > 0 && !unbound:
		ws = bound
	case len(bound) == 0 && !unbound:
		return nil
	}
	w := rapid.SampledFrom(ws).Draw(t, "window")
	ops := []verbs.WROpcode{verbs.WRRDMAWrite, verbs.WRRDMARead, verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite, verbs.WRSendWithInv}
	if r.faults && r.prof.SendInvErrAcked {
		// Under XFER-29 reading B a failed SEND_WITH_INV is acknowledged
		// and only the responder fails; were the ACK lost, the requester
		// would run out of retries against it instead, and the model
		// does not follow a requester that may or may not be in ERR.
		ops = ops[:len(ops)-1]
	}
	if rapid.Bool().Draw(t, "any opcode") && rapid.Bool().Draw(t, "really any") {
		// Mostly what the window's last bind allows: a failed access
		// ends the connection (MW-06, XFER-14).
	} else {
		var ok []verbs.WROpcode
		for _, op := range ops {
			need := map[verbs.WROpcode]verbs.AccessFlags{verbs.WRRDMAWrite: verbs.AccessRemoteWrite, verbs.WRRDMARead: verbs.AccessRemoteRead,
				verbs.WRAtomicCmpAndSwp: verbs.AccessRemoteAtomic, verbs.WRAtomicFetchAndAdd: verbs.AccessRemoteAtomic,
				verbs.WRAtomicWrite: verbs.AccessRemoteWrite}[op]
			if need == 0 || w.bind.Access&need != 0 {
				ok = append(ok, op)
			}
		}
		ops = ok
	}
	if len(ops) == 0 {
		return nil // the window grants nothing and SEND_WITH_INV is left out
	}
	s.Op = rapid.SampledFrom(ops).Draw(t, "window opcode")
	s.RKey = w.drawKey(t)
	a := &windowAccess{w: w, n: -1}
	switch s.Op {
	case verbs.WRSendWithInv:
		if rapid.IntRange(0, 3).Draw(t, "a key the window does not hold") == 1 {
			// The responder fails it (MW-07) and XFER-29's readings part:
			// a walk must meet this often, since binds rarely fail now
			// that a type 2 bind takes any index (MW-05).
			s.RKey ^= 1
		}
		return a
	case verbs.WRAtomicCmpAndSwp, verbs.WRAtomicFetchAndAdd, verbs.WRAtomicWrite:
		a.n = 8
	default:
		l := min(exposedLen, int(w.bind.Length))
		a.n = rapid.IntRange(0, l).Draw(t, "window access length")
		if rapid.Bool().Draw(t, "longer") && rapid.Bool().Draw(t, "than the window") {
			a.n = l + 1
		}
	}
	s.Window = true
	return a
}

// place draws where in the window the access s goes: inside, flush with
// its end, a byte past it or before it, counted from the window's address
// or, bound ZERO_BASED, from 0.
func (a *windowAccess) place(t *rapid.T, s *model.Send) {
	if !s.Window {
		return
	}
	l := int(a.w.bind.Length)
	var off int
	if s.Op == verbs.WRAtomicCmpAndSwp || s.Op == verbs.WRAtomicFetchAndAdd || s.Op == verbs.WRAtomicWrite {
		last := max(0, l/8-1) // the last whole 8-byte slot
		if rapid.Bool().Draw(t, "past") && rapid.Bool().Draw(t, "the last slot") {
			last++
		}
		off = 8 * rapid.IntRange(0, last).Draw(t, "atomic slot") // 8-byte aligned (XFER-17, XFER-33)
		if s.Op != verbs.WRAtomicWrite {
			s.Compare = rapid.Uint64().Draw(t, "compare")
			s.SwapAdd = rapid.Uint64().Draw(t, "swap or add")
		}
	} else {
		off = rapid.IntRange(0, max(0, l-s.Len)).Draw(t, "window offset")
		if rapid.Bool().Draw(t, "at an edge") && rapid.Bool().Draw(t, "of the window") {
			off = rapid.SampledFrom([]int{l - s.Len, l - s.Len + 1, -1}).Draw(t, "edge")
		}
	}
	if a.w.bind.Access&verbs.AccessZeroBased != 0 {
		s.RAddr = uint64(int64(off))
	} else {
		s.RAddr = uint64(int64(a.w.bind.Addr) + int64(off))
	}
}

// compareNow makes a CMP_AND_SWP compare against the word its window holds
// now, half the time, so that both of its outcomes come.
func (r *trafficRun) compareNow(t *rapid.T, peer int, s *model.Send, w *window) {
	if s.Op != verbs.WRAtomicCmpAndSwp || rapid.Bool().Draw(t, "compare the current word") {
		return
	}
	p := r.qps[peer]
	base := s.RAddr
	if w.bind.Access&verbs.AccessZeroBased != 0 {
		base += w.bind.Addr
	}
	at := int64(base) - int64(p.mr.Addr()) - exposedOff
	if at >= 0 && at+8 <= exposedLen {
		s.Compare = binary.NativeEndian.Uint64(p.buf[exposedOff+at:])
	}
}

func (r *trafficRun) mwAlloc(t *rapid.T) {
	i, ok := r.pick(t, func(i int) bool { return r.qps[i].typ == verbs.QPTypeRC && len(r.liveMWs(i)) < maxMWs })
	if !ok {
		return
	}
	typ := rapid.SampledFrom([]verbs.MWType{verbs.MWType1, verbs.MWType2}).Draw(t, "window type")
	mw, err := r.qps[i].pd.AllocMW(typ)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return
	}
	r.fatal(err)
	idx, err := r.m.AllocMW(i, typ, mw.RKey())
	r.fatal(err)
	r.mws = append(r.mws, &window{qp: i, mw: mw, idx: idx, typ: typ, keys: []uint32{mw.RKey()}})
	r.step("qp %d: alloc window %d, %v, rkey %#x", i, idx, typ, mw.RKey())
}

// pickMW draws a live window whose QP is in RTS or ERR, settles, and
// reports whether the QP's send queue is idle with room for a request: the
// model follows binds and LOCAL_INV posted alone on such a queue only.
// Most of the time it draws among the windows ok accepts, if any.
func (r *trafficRun) pickMW(t *rapid.T, ok func(w *window) bool) (*window, bool) {
	var c, good []*window
	for _, w := range r.mws {
		if st := r.m.State(w.qp); !w.dead && (st == verbs.QPStateRTS || st == verbs.QPStateErr) {
			c = append(c, w)
			if ok(w) {
				good = append(good, w)
			}
		}
	}
	if len(c) == 0 {
		return nil, false
	}
	switch {
	case len(good) > 0 && rapid.IntRange(0, 5).Draw(t, "a window that works") != 3:
		c = good
	case len(good) == 0 && rapid.IntRange(0, 3).Draw(t, "one that fails") != 2:
		return nil, false
	}
	w := rapid.SampledFrom(c).Draw(t, "window")
	r.settle()
	send, _ := r.m.Outstanding(w.qp)
	room, _ := r.m.Room(w.qp)
	return w, send == 0 && room.Min >= 1 && room.Exact()
}

// noteKey records the key window w reports after the model has checked it.
func (r *trafficRun) noteKey(w *window) {
	k := w.mw.RKey()
	r.fatal(r.m.CheckMWKey(w.idx, k))
	if k != w.keys[len(w.keys)-1] {
		w.keys = append(w.keys, k)
		if len(w.keys) > 3 {
			w.keys = w.keys[1:]
		}
	}
}

func (r *trafficRun) mwBind(t *rapid.T) {
	// A type 2 window is bound once until invalidated (MW-05).
	w, ok := r.pickMW(t, func(w *window) bool { _, bound := r.m.MWKey(w.idx); return w.typ == verbs.MWType1 || !bound })
	if !ok {
		return
	}
	q := r.qps[w.qp]
	start := 8 * rapid.IntRange(0, exposedLen/8-1).Draw(t, "window start")
	var length int
	// rapid favours the ends of a range: the rare cases are in its middle.
	switch rapid.IntRange(0, 11).Draw(t, "window length kind") {
	case 5:
		length = rapid.IntRange(exposedLen-start+1, exposedLen-start+8).Draw(t, "window length") // past the MR (MW-05)
	case 6:
		length = 0 // unbinds type 1; MW_BIND_ERR for type 2 (MW-04, MW-05)
	default:
		length = rapid.IntRange(1, exposedLen-start).Draw(t, "window length")
	}
	var access verbs.AccessFlags
	for _, a := range []verbs.AccessFlags{verbs.AccessRemoteRead, verbs.AccessRemoteWrite, verbs.AccessRemoteAtomic} {
		if rapid.IntRange(0, 2).Draw(t, "right") < 2 {
			access |= a
		}
	}
	if rapid.IntRange(0, 5).Draw(t, "zero based") == 3 {
		access |= verbs.AccessZeroBased
	}
	if rapid.IntRange(0, 15).Draw(t, "a right windows lack") == 7 {
		access |= verbs.AccessMWBind // MW-05: MW_BIND_ERR (LOCAL_WRITE would be accepted)
	}
	b := model.MWBind{Addr: q.mr.Addr() + exposedOff + uint64(start), Length: uint64(length), Access: access}
	info := verbs.MWBindInfo{MR: q.mr, Addr: b.Addr, Length: b.Length, Access: access}
	id := r.nextWRID()
	s := model.Send{WRID: id, Op: verbs.WRBindMW, Signaled: rapid.IntRange(0, 3).Draw(t, "signaled") > 0, MW: w.idx, Bind: b, Dest: -1}
	var flags verbs.SendFlags
	if s.Signaled {
		flags = verbs.SendSignaled
	}
	if w.typ == verbs.MWType2 && rapid.IntRange(0, 5).Draw(t, "ibv_bind_mw of a type 2 window") == 3 {
		// MW-04: EINVAL, nothing posted, nothing changed.
		if err := q.q.BindMW(w.mw, id, flags, info); !errors.Is(err, syscall.EINVAL) {
			r.t.Fatalf("window %d: ibv_bind_mw of a type 2 window returned %v, want EINVAL (MW-04)", w.idx, err)
		}
		r.noteKey(w)
		return
	}
	if w.typ == verbs.MWType1 {
		r.step("qp %d: ibv_bind_mw window %d: %+v", w.qp, w.idx, s)
		r.fatal(q.q.BindMW(w.mw, id, flags, info))
	} else {
		s.RKey = w.keys[len(w.keys)-1]&^0xff | uint32(rapid.Uint8().Draw(t, "tag"))
		if rapid.IntRange(0, 11).Draw(t, "another index") == 5 {
			s.RKey ^= 0x100 // MW-05: only the low byte counts; the window keeps its index
		}
		r.step("qp %d: post BIND_MW window %d: %+v", w.qp, w.idx, s)
		n, err := q.q.PostSend([]verbs.SendWR{{WRID: id, Opcode: verbs.WRBindMW, Flags: flags, MW: w.mw, RKey: s.RKey, Bind: info}})
		r.checkPost(w.qp, false, 1, n, err)
	}
	r.fatal(r.m.PostSend(w.qp, []model.Send{s}))
	r.settle()
	r.noteKey(w)
	w.bind = b
}

func (r *trafficRun) mwInv(t *rapid.T) {
	// Only a bound type 2 window can be invalidated (MW-07).
	w, ok := r.pickMW(t, func(w *window) bool { _, bound := r.m.MWKey(w.idx); return w.typ == verbs.MWType2 && bound })
	if !ok {
		return
	}
	id := r.nextWRID()
	s := model.Send{WRID: id, Op: verbs.WRLocalInv, Signaled: rapid.IntRange(0, 3).Draw(t, "signaled") > 0, RKey: w.drawKey(t), Dest: -1}
	wr := verbs.SendWR{WRID: id, Opcode: verbs.WRLocalInv, Imm: s.RKey}
	if s.Signaled {
		wr.Flags = verbs.SendSignaled
	}
	r.step("qp %d: post LOCAL_INV of window %d: %+v", w.qp, w.idx, s)
	n, err := r.qps[w.qp].q.PostSend([]verbs.SendWR{wr})
	r.checkPost(w.qp, false, 1, n, err)
	r.fatal(r.m.PostSend(w.qp, []model.Send{s}))
	r.settle()
	r.noteKey(w)
}

func (r *trafficRun) mwDealloc(t *rapid.T) {
	var c []*window
	for _, w := range r.mws {
		if !w.dead {
			c = append(c, w)
		}
	}
	if len(c) == 0 {
		return
	}
	w := rapid.SampledFrom(c).Draw(t, "window")
	r.settle()
	r.step("qp %d: dealloc window %d", w.qp, w.idx)
	r.fatal(w.mw.Dealloc())
	r.fatal(r.m.DeallocMW(w.idx))
	w.dead = true
}
