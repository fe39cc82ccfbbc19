package model

import (
	"encoding/binary"
	"fmt"

	"github.com/verbsim/verbsim/verbs"
)

// This file models memory windows on RC QPs, written from spec/catalogue.md
// §16 (MW-01..MW-07), XFER-13 (READ), XFER-17 (atomics), XFER-24 and
// XFER-29 (SEND_WITH_INV).
//
// Each QP may expose the last bytes of its MR (Expose): the area windows
// are bound to, which nothing but accesses through windows changes, so that
// the model knows every byte of it. Windows belong to the PD of the QP that
// allocated them, and the model assumes every QP has a PD of its own: a
// window's rkey is then good only at that QP, whatever its type.
//
// Binds (type 1 through ibv_bind_mw, type 2 through IBV_WR_BIND_MW) and
// LOCAL_INV are posted alone, on a QP whose send queue holds no request
// that has not completed (PostSend refuses anything else), and execute at
// once: the model does not follow a local operation queued behind traffic.
// A remote WRITE, READ or atomic through a window key, and a SEND_WITH_INV,
// executes in its RC stream in order, and the model checks the window as it
// stands then (MW-06, MW-07).

// MWBind is the range and rights of a bind (struct ibv_mw_bind_info; the
// MR is the binding QP's own): Addr and Length in the MR's address space.
type MWBind struct {
	Addr, Length uint64
	Access       verbs.AccessFlags
}

// twin is the model of one memory window.
type twin struct {
	qp       int // the QP whose PD holds it
	typ      verbs.MWType
	reported uint32 // ibv_mw.rkey as the application reads it
	key      uint32 // the key that works, while bound
	bound    bool
	dead     bool
	MWBind
}

// mwRights are the flags a window may be bound with (MW-05); LOCAL_WRITE
// is accepted and grants nothing, as rxe and mlx5 accept it.
const mwRights = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite | verbs.AccessRemoteAtomic | verbs.AccessZeroBased

func isAtomic(op verbs.WROpcode) bool {
	return op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd
}

// isEight reports whether op moves exactly one 8-byte word: the two
// fetching atomics and ATOMIC_WRITE (XFER-17, XFER-33).
func isEight(op verbs.WROpcode) bool { return isAtomic(op) || op == verbs.WRAtomicWrite }

func isLocalOp(op verbs.WROpcode) bool { return op == verbs.WRBindMW || op == verbs.WRLocalInv }

// incRKey is ibv_inc_rkey: the same index, the next tag (MW-04).
func incRKey(k uint32) uint32 { return k&^0xff | (k+1)&0xff }

// sendOpcode is the opcode of a successful send completion (WC-04).
func sendOpcode(op verbs.WROpcode) verbs.WCOpcode {
	switch op {
	case verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		return verbs.WCRDMAWrite
	case verbs.WRRDMARead:
		return verbs.WCRDMARead
	case verbs.WRAtomicCmpAndSwp:
		return verbs.WCCompSwap
	case verbs.WRAtomicFetchAndAdd:
		return verbs.WCFetchAdd
	case verbs.WRAtomicWrite:
		return verbs.WCAtomicWrite
	case verbs.WRBindMW:
		return verbs.WCBindMW
	case verbs.WRLocalInv:
		return verbs.WCLocalInv
	}
	return verbs.WCSend
}

// Expose records that the last len(data) bytes of RC QP q's MR, at address
// addr, hold data, and that from now on only accesses through windows
// change them. Quiesced compares them with Memory.Exposed.
func (m *Traffic) Expose(q int, addr uint64, data []byte) {
	t := m.qps[q]
	t.exposedAt, t.exposed = addr, append([]byte(nil), data...)
}

// AllocMW records that ibv_alloc_mw of type typ in the PD of QP q returned
// a window whose rkey is rkey, and returns the window's index.
func (m *Traffic) AllocMW(q int, typ verbs.MWType, rkey uint32) (int, error) {
	if typ != verbs.MWType1 && typ != verbs.MWType2 {
		return 0, fmt.Errorf("window type %v is refused (MW-01), not modelled", typ)
	}
	m.wins = append(m.wins, &twin{qp: q, typ: typ, reported: rkey})
	return len(m.wins) - 1, nil
}

// DeallocMW records ibv_dealloc_mw of window w: a bound window is unbound
// first (MW-03), and its keys stop working.
func (m *Traffic) DeallocMW(w int) error {
	x := m.wins[w]
	if x.dead {
		return fmt.Errorf("window %d is already deallocated (MW-02: EINVAL), not modelled", w)
	}
	x.dead, x.bound = true, false
	return nil
}

// MWKey returns the rkey window w reports (ibv_mw.rkey) as the model
// predicts it, and whether the window is bound with it.
func (m *Traffic) MWKey(w int) (rkey uint32, bound bool) {
	x := m.wins[w]
	return x.reported, x.bound && x.key == x.reported
}

// CheckMWKey compares the rkey window w reports with the model's: a type 1
// window's key moves to the next tag when ibv_bind_mw returns, a type 2
// window's when its bind executes, and the index never changes (MW-01,
// MW-04).
func (m *Traffic) CheckMWKey(w int, got uint32) error {
	x := m.wins[w]
	if got != x.reported {
		return fmt.Errorf("window %d (type %v): rkey %#x, want %#x (MW-01, MW-04)", w, x.typ, got, x.reported)
	}
	return nil
}

// checkWindowOp checks that the model follows send request s of QP q, one
// of n posted together.
func (m *Traffic) checkWindowOp(q int, s Send, n int) error {
	t := m.qps[q]
	if t.Type != verbs.QPTypeRC {
		return fmt.Errorf("qp %d: %v is modelled on RC QPs only", q, s.Op)
	}
	switch {
	case s.Op == verbs.WRRDMARead || isEight(s.Op):
		if !s.Window {
			return fmt.Errorf("qp %d: %v is modelled through window keys only", q, s.Op)
		}
		if isEight(s.Op) && s.Len != 8 {
			return fmt.Errorf("qp %d: an atomic of %d bytes is refused (XFER-17, XFER-33), not modelled", q, s.Len)
		}
	case isLocalOp(s.Op):
		if n != 1 {
			return fmt.Errorf("qp %d: %v is modelled posted alone", q, s.Op)
		}
		for _, w := range t.sq {
			if w.allowed == nil {
				return fmt.Errorf("qp %d: %v is modelled on an idle send queue only; request %#x has not completed", q, s.Op, w.id)
			}
		}
		if s.Op == verbs.WRBindMW && (s.MW < 0 || s.MW >= len(m.wins) || m.wins[s.MW].dead) {
			return fmt.Errorf("qp %d: BIND_MW of no live window (%d)", q, s.MW)
		}
	}
	return nil
}

// bindPosted records the post of a bind: ibv_bind_mw gives a type 1
// window the next key before it returns, whatever the bind's fate (MW-04).
func (m *Traffic) bindPosted(msg *tmsg) {
	if x := m.wins[msg.MW]; x.typ == verbs.MWType1 {
		x.reported = incRKey(x.reported)
		msg.RKey = x.reported
	}
}

// localOp executes a BIND_MW or LOCAL_INV posted on QP q, in RTS, with
// nothing before it outstanding: it completes at once (MW-04, MW-05,
// MW-07); a failure moves the QP to ERR like any failed request.
func (m *Traffic) localOp(q int, t *tqp, msg *tmsg) {
	msg.fate = fateDelivered
	now := m.sendDue()
	st := verbs.WCSuccess
	if msg.Op == verbs.WRBindMW {
		if !m.bind(q, msg) {
			st = verbs.WCMWBindErr
		}
	} else if !m.invalidate(q, msg.RKey) {
		st = verbs.WCLocQPOpErr
	}
	if st != verbs.WCSuccess {
		msg.fate = fateFailed
		m.failRequester(t, msg, now, st)
		return
	}
	complete(msg.wr, now, st)
}

// bind runs the checks of MW-05 on msg's bind through QP q and binds, or
// reports false with nothing changed. The MR is always q's own, registered
// with LOCAL_WRITE and MW_BIND, and it ends where the exposed area ends.
func (m *Traffic) bind(q int, msg *tmsg) bool {
	x, b := m.wins[msg.MW], msg.Bind
	t := m.qps[q]
	// Only the key's low byte is the request's; the index stays the
	// window's (MW-05).
	key := x.reported&^0xff | msg.RKey&0xff
	switch {
	case x.qp != q: // the window is of another PD
		return false
	case b.Access&^mwRights != 0:
		return false
	case b.Length == 0 && x.typ == verbs.MWType2:
		return false
	case b.Length == 0:
		x.bound, x.key = false, key // a type 1 unbind
		return true
	case x.typ == verbs.MWType1 && b.Access&verbs.AccessZeroBased != 0 && m.r.MWType1NoZeroBased:
		return false
	case x.typ == verbs.MWType2 && x.bound:
		return false
	case t.exposed == nil || b.Addr+b.Length > t.exposedAt+uint64(len(t.exposed)) || b.Addr+b.Length < b.Addr:
		return false // the window leaves the MR
	}
	x.bound, x.key, x.MWBind = true, key, b
	if x.typ == verbs.MWType2 {
		x.reported = key
	}
	return true
}

// invalidate unbinds the bound type 2 window of QP q's PD whose key is
// rkey (LOCAL_INV, SEND_WITH_INV: MW-07), or reports false.
func (m *Traffic) invalidate(q int, rkey uint32) bool {
	for _, x := range m.wins {
		if x.qp == q && !x.dead && x.bound && x.key == rkey {
			if x.typ != verbs.MWType2 {
				return false
			}
			x.bound = false
			return true
		}
	}
	return false
}

// windowAccess checks an RDMA WRITE, READ or atomic through a window key
// at responder QP q (MW-06) and, if it passes, executes it on the exposed
// area: a WRITE places its payload, a READ takes the bytes it will bring
// back, an atomic takes the old word and stores the new one (XFER-17, in
// the host's byte order, verbsim's reading), an ATOMIC_WRITE stores its 8
// bytes (XFER-33). A zero-length WRITE or READ checks nothing (XFER-24).
func (m *Traffic) windowAccess(q int, msg *tmsg) bool {
	if msg.Len == 0 && !isAtomic(msg.Op) {
		if msg.Op == verbs.WRRDMARead {
			msg.got = []byte{}
		}
		return true
	}
	need := verbs.AccessRemoteWrite
	switch {
	case msg.Op == verbs.WRRDMARead:
		need = verbs.AccessRemoteRead
	case isAtomic(msg.Op):
		need = verbs.AccessRemoteAtomic
	}
	t := m.qps[q]
	var x *twin
	for _, w := range m.wins {
		if w.qp == q && !w.dead && w.bound && w.key == msg.RKey {
			x = w
		}
	}
	if x == nil || x.Access&need == 0 || t.exposed == nil {
		return false
	}
	off := msg.RAddr
	if x.Access&verbs.AccessZeroBased == 0 {
		if off < x.Addr {
			return false
		}
		off -= x.Addr
	}
	n := uint64(msg.Len)
	if off >= x.Length || n > x.Length-off {
		return false
	}
	at := x.Addr - t.exposedAt + off
	area := t.exposed[at : at+n]
	switch msg.Op {
	case verbs.WRRDMAWrite, verbs.WRAtomicWrite:
		copy(area, Payload(msg.Seed, msg.Len))
	case verbs.WRRDMARead:
		msg.got = append([]byte(nil), area...)
	default:
		msg.got = append([]byte(nil), area...)
		old := binary.NativeEndian.Uint64(area)
		v := old + msg.SwapAdd
		if msg.Op == verbs.WRAtomicCmpAndSwp {
			v = old
			if old == msg.Compare {
				v = msg.SwapAdd
			}
		}
		binary.NativeEndian.PutUint64(area, v)
	}
	return true
}

// checkFetched compares what a successful READ or atomic brought back with
// what the model took at the responder (XFER-13, XFER-17).
func checkFetched(msg *tmsg, w *verbs.WC, mem Memory) error {
	if msg.Op != verbs.WRRDMARead && !isAtomic(msg.Op) {
		return nil
	}
	if msg.got == nil {
		return fmt.Errorf("%v %#x succeeded, but its window refused it (MW-06)", msg.Op, msg.WRID)
	}
	if int(w.ByteLen) != len(msg.got) {
		return fmt.Errorf("byte_len %d, want %d (XFER-13, XFER-17)", w.ByteLen, len(msg.got))
	}
	return diff(mem.Local(msg.WRID), msg.got, fmt.Sprintf("the local buffer of %v %#x (XFER-13, XFER-17)", msg.Op, msg.WRID))
}
