package conformance_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// The wrapper forwards the transport capabilities (conformance/verbs_xfer.go)
// through the hooks tick and runIdle; a peer device is wrapped with the
// same hooks.

// Peer implements conformance.PeerDevice.
func (d *mDevice) Peer() (conformance.Device, error) {
	p, ok := d.inner.(conformance.PeerDevice)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	inner, err := p.Peer()
	if err != nil {
		return nil, err
	}
	return &mDevice{inner: inner, h: d.h}, nil
}

// Tick implements conformance.Clock.
func (d *mDevice) Tick(n uint64) {
	c := d.inner.(conformance.Clock)
	if d.h.tick != nil {
		d.h.tick(c, n)
		return
	}
	c.Tick(n)
}

// RunUntilIdle implements conformance.Clock.
func (d *mDevice) RunUntilIdle(limit uint64) bool {
	c := d.inner.(conformance.Clock)
	if d.h.runIdle != nil {
		return d.h.runIdle(c, limit)
	}
	return c.RunUntilIdle(limit)
}

// SetFaults implements conformance.Faults.
func (d *mDevice) SetFaults(drop, duplicate, delay float64) error {
	return d.inner.(conformance.Faults).SetFaults(drop, duplicate, delay)
}

// SetPortState implements conformance.LinkControl.
func (d *mDevice) SetPortState(port uint8, up bool) error {
	return d.inner.(conformance.LinkControl).SetPortState(port, up)
}

// wrKey names a work request as its completion does: the (inner) CQ it
// completes on, qp_num and wr_id. Every case makes new CQs, so keys of
// earlier cases, whose QP numbers and wr_ids repeat, never match.
type wrKey struct {
	cq  verbs.CQ
	qpn uint32
	id  uint64
}

// trackedQP is what the tracker keeps of an inner QP.
type trackedQP struct {
	typ      verbs.QPType
	scq, rcq verbs.CQ
}

// wireTracker records what the transport mutants need: the registered buffers
// (so a mutant can corrupt memory the way a broken adapter would), the
// requests posted, and each QP's type and CQs.
type wireTracker struct {
	mu      sync.Mutex
	mem     []trackedMem
	qps     map[verbs.QP]trackedQP
	types   map[wrKey]verbs.QPType // by CQ and qp_num (id 0)
	sends   map[wrKey]verbs.SendWR
	recvs   map[wrKey][]verbs.SGE
	srq     map[uint64][]verbs.SGE   // receives posted to SRQs, by wr_id
	lastErr map[wrKey]verbs.WCStatus // by CQ and qp_num
	held    map[verbs.QP][]verbs.SendWR
}

type trackedMem struct {
	mr   verbs.MR // the inner MR
	addr uint64
	buf  []byte
}

// wireHooks returns hooks that record, and a tracker; mutants change them.
func wireHooks() (*wireTracker, hooks) {
	tr := &wireTracker{qps: map[verbs.QP]trackedQP{}, types: map[wrKey]verbs.QPType{}, sends: map[wrKey]verbs.SendWR{},
		recvs: map[wrKey][]verbs.SGE{}, srq: map[uint64][]verbs.SGE{}, lastErr: map[wrKey]verbs.WCStatus{},
		held: map[verbs.QP][]verbs.SendWR{}}
	return tr, hooks{
		regMR: func(pd verbs.PD, buf []byte, access verbs.AccessFlags) (verbs.MR, error) {
			mr, err := pd.RegMR(buf, access)
			if err == nil && len(buf) > 0 {
				tr.mu.Lock()
				tr.mem = append(tr.mem, trackedMem{mr, mr.Addr(), buf})
				tr.mu.Unlock()
			}
			return mr, err
		},
		// What a case leaves behind is forgotten when it tears down, so
		// that a mutant does not keep every buffer of the suite alive.
		deregMR: func(mr verbs.MR) error {
			tr.mu.Lock()
			tr.mem = slices.DeleteFunc(tr.mem, func(m trackedMem) bool { return m.mr == mr })
			tr.mu.Unlock()
			return mr.Dereg()
		},
		destroyCQ: func(q verbs.CQ, ctx context.Context) error {
			tr.mu.Lock()
			forgetCQ(tr.types, q)
			forgetCQ(tr.sends, q)
			forgetCQ(tr.recvs, q)
			forgetCQ(tr.lastErr, q)
			tr.mu.Unlock()
			return q.DestroyContext(ctx)
		},
		destroyQP: func(q verbs.QP, ctx context.Context) error {
			tr.mu.Lock()
			delete(tr.qps, q)
			delete(tr.held, q)
			tr.mu.Unlock()
			return q.DestroyContext(ctx)
		},
		destroySRQ: func(s verbs.SRQ, ctx context.Context) error {
			tr.mu.Lock()
			clear(tr.srq)
			tr.mu.Unlock()
			return s.DestroyContext(ctx)
		},
		createQP: func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
			q, err := pd.CreateQP(a)
			if err == nil {
				tr.mu.Lock()
				tr.qps[q] = trackedQP{a.Type, a.SendCQ, a.RecvCQ}
				tr.types[wrKey{a.SendCQ, q.Num(), 0}] = a.Type
				tr.types[wrKey{a.RecvCQ, q.Num(), 0}] = a.Type
				tr.mu.Unlock()
			}
			return q, err
		},
		postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
			n, err := q.PostSend(wrs)
			tr.mu.Lock()
			for _, r := range wrs[:n] {
				tr.sends[wrKey{tr.qps[q].scq, q.Num(), r.WRID}] = r
			}
			tr.mu.Unlock()
			return n, err
		},
		postRecv: func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
			n, err := q.PostRecv(wrs)
			tr.mu.Lock()
			for _, r := range wrs[:n] {
				tr.recvs[wrKey{tr.qps[q].rcq, q.Num(), r.WRID}] = r.SGList
			}
			tr.mu.Unlock()
			return n, err
		},
		postSRQ: func(s verbs.SRQ, wrs []verbs.RecvWR) (int, error) {
			n, err := s.PostRecv(wrs)
			tr.mu.Lock()
			for _, r := range wrs[:n] {
				tr.srq[r.WRID] = r.SGList
			}
			tr.mu.Unlock()
			return n, err
		},
	}
}

// forgetCQ drops the entries of m that belong to the CQ q.
func forgetCQ[V any](m map[wrKey]V, q verbs.CQ) {
	maps.DeleteFunc(m, func(k wrKey, _ V) bool { return k.cq == q })
}

// flip inverts the byte at address a in the newest registered buffer that
// holds it (older ones belong to earlier cases). The caller holds tr.mu.
func (tr *wireTracker) flip(a uint64) {
	for i := len(tr.mem) - 1; i >= 0; i-- {
		if m := tr.mem[i]; a >= m.addr && a < m.addr+uint64(len(m.buf)) {
			m.buf[a-m.addr] ^= 0xff
			return
		}
	}
}

// sgeAt returns the address of byte off of the buffer sges describe.
func sgeAt(sges []verbs.SGE, off uint64) (uint64, bool) {
	for _, s := range sges {
		if off < uint64(s.Length) {
			return s.Addr + off, true
		}
		off -= uint64(s.Length)
	}
	return 0, false
}

// isRecv tells a receive completion on cq: by opcode when it succeeded, by
// the receives posted when not.
func (tr *wireTracker) isRecv(cq verbs.CQ, c verbs.WC) bool {
	if c.Status == verbs.WCSuccess {
		return c.Opcode.IsRecv()
	}
	_, ok := tr.recvs[wrKey{cq, c.QPNum, c.WRID}]
	return ok
}

// wireMutant makes a mutant from recording hooks changed by edit.
func wireMutant(name string, rules []string, edit func(tr *wireTracker, h *hooks)) mutant {
	tr, h := wireHooks()
	edit(tr, &h)
	return mutant{name: name, rules: rules, h: h}
}

// eachWC is a mutant whose poll passes every completion through f, under
// the tracker's lock.
func eachWC(name string, rules []string, f func(tr *wireTracker, q verbs.CQ, c *verbs.WC)) mutant {
	return wireMutant(name, rules, func(tr *wireTracker, h *hooks) {
		h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
			n, err := q.Poll(wcs)
			tr.mu.Lock()
			defer tr.mu.Unlock()
			for i := range wcs[:n] {
				f(tr, q, &wcs[i])
			}
			return n, err
		}
	})
}

// statusMutant rewrites one status into another.
func statusMutant(from, to verbs.WCStatus, rules ...string) mutant {
	return eachWC(from.Name()+" reads "+to.Name(), rules, func(tr *wireTracker, _ verbs.CQ, c *verbs.WC) {
		if c.Status == from {
			c.Status = to
		}
	})
}

// readingMutant is a mutant that states a transport reading its device does not
// follow.
func readingMutant(name string, edit func(p *verbs.Readings), rules ...string) mutant {
	return mutant{name: "the device states " + name + " but does not follow it", rules: rules,
		h: hooks{profile: func(p verbs.Readings) verbs.Readings { edit(&p); return p }}}
}

// postEdit is a mutant whose post_send passes every request through f.
func postEdit(name string, rules []string, f func(tr *wireTracker, q verbs.QP, r *verbs.SendWR)) mutant {
	return wireMutant(name, rules, func(tr *wireTracker, h *hooks) {
		post := h.postSend
		h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
			wrs = append([]verbs.SendWR(nil), wrs...)
			for i := range wrs {
				wrs[i].SGList = append([]verbs.SGE(nil), wrs[i].SGList...)
				tr.mu.Lock()
				f(tr, q, &wrs[i])
				tr.mu.Unlock()
			}
			return post(q, wrs)
		}
	})
}

// pollBatch is a mutant whose poll hands each batch to f, which returns the
// batch to report (within the caller's slice).
func pollBatch(name string, rules []string, f func(tr *wireTracker, q verbs.CQ, got []verbs.WC, room int) []verbs.WC) mutant {
	return wireMutant(name, rules, func(tr *wireTracker, h *hooks) {
		h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
			n, err := q.Poll(wcs)
			tr.mu.Lock()
			defer tr.mu.Unlock()
			out := f(tr, q, append([]verbs.WC(nil), wcs[:n]...), len(wcs))
			return copy(wcs, out), err
		}
	})
}

// portless is a port event that has lost its port number.
type portless struct{ verbs.AsyncEvent }

func (portless) Port() uint8 { return 0 }
