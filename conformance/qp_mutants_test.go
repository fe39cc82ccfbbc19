package conformance_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/conformance/simdev"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// CreateQP and CreateSRQ complete ghostPD (pd_mutants_test.go) as a
// verbs.PD.
func (ghostPD) CreateQP(verbs.QPInitAttr) (verbs.QP, error) {
	return nil, verr.New("ibv_create_qp", syscall.EINVAL, "ghost PD")
}

func (ghostPD) CreateSRQ(verbs.SRQInitAttr) (verbs.SRQ, error) {
	return nil, verr.New("ibv_create_srq", syscall.EINVAL, "ghost PD")
}

// wcKey names the completion a request will produce: its CQ (inner), qp_num
// and wr_id.
type wcKey struct {
	cq  verbs.CQ
	qpn uint32
	id  uint64
}

// qpInfo is what a qpTracker remembers of one inner QP.
type qpInfo struct {
	init verbs.QPInitAttr // with the inner CQs and SRQ
	cap  verbs.QPCap      // as created
}

// qpTracker records what the QP, FLUSH and SRQ mutants decide on: each inner
// QP's creation attributes, the receives and unsignaled sends posted (by
// qp_num and wr_id, which is what a completion shows), the receives posted
// to each SRQ, and async events a mutant makes up. One tracker serves one
// mutant; the cases run one after another, so entries of earlier cases only
// linger.
type qpTracker struct {
	mu     sync.Mutex
	qps    map[verbs.QP]*qpInfo
	recv   map[wcKey]bool
	unsig  map[wcKey]bool
	srqIDs map[verbs.SRQ][]uint64
	fakes  []verbs.AsyncEvent
}

func newQPTracker() *qpTracker {
	return &qpTracker{
		qps: map[verbs.QP]*qpInfo{}, recv: map[wcKey]bool{}, unsig: map[wcKey]bool{},
		srqIDs: map[verbs.SRQ][]uint64{},
	}
}

func (tr *qpTracker) info(q verbs.QP) *qpInfo {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if i, ok := tr.qps[q]; ok {
		return i
	}
	return &qpInfo{}
}

// fake queues an async event that the context will report first.
func (tr *qpTracker) fake(typ verbs.EventType, obj any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.fakes = append(tr.fakes, fakeEvent{typ, obj})
}

func (tr *qpTracker) popFake() verbs.AsyncEvent {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.fakes) == 0 {
		return nil
	}
	ev := tr.fakes[0]
	tr.fakes = tr.fakes[1:]
	return ev
}

// hooks returns hooks that forward every QP and SRQ verb and keep the
// records; mutants replace some of them.
func (tr *qpTracker) hooks() hooks {
	return hooks{
		createQP: func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
			q, err := pd.CreateQP(a)
			if err == nil && q != nil {
				c := a.Cap
				if got, err := qAttr(q); err == nil {
					c = got.Cap
				}
				tr.mu.Lock()
				tr.qps[q] = &qpInfo{init: a, cap: c}
				tr.mu.Unlock()
			}
			return q, err
		},
		postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
			n, err := q.PostSend(wrs)
			init := tr.info(q).init
			tr.mu.Lock()
			for _, w := range wrs[:n] {
				if !init.SQSigAll && w.Flags&verbs.SendSignaled == 0 {
					tr.unsig[wcKey{init.SendCQ, q.Num(), w.WRID}] = true
				}
			}
			tr.mu.Unlock()
			return n, err
		},
		postRecv: func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
			n, err := q.PostRecv(wrs)
			rcq := tr.info(q).init.RecvCQ
			tr.mu.Lock()
			for _, w := range wrs[:n] {
				tr.recv[wcKey{rcq, q.Num(), w.WRID}] = true
			}
			tr.mu.Unlock()
			return n, err
		},
		postSRQ: func(s verbs.SRQ, wrs []verbs.RecvWR) (int, error) {
			n, err := s.PostRecv(wrs)
			tr.mu.Lock()
			for _, w := range wrs[:n] {
				tr.srqIDs[s] = append(tr.srqIDs[s], w.WRID)
			}
			tr.mu.Unlock()
			return n, err
		},
		tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
			if ev := tr.popFake(); ev != nil {
				return ev, nil
			}
			return c.TryGetAsyncEvent()
		},
	}
}

// fakeEvent is an async event a mutant makes up.
type fakeEvent struct {
	typ verbs.EventType
	obj any
}

func (f fakeEvent) EventType() verbs.EventType { return f.typ }
func (f fakeEvent) CQ() verbs.CQ               { q, _ := f.obj.(verbs.CQ); return q }
func (f fakeEvent) QP() verbs.QP               { q, _ := f.obj.(verbs.QP); return q }
func (f fakeEvent) SRQ() verbs.SRQ             { s, _ := f.obj.(verbs.SRQ); return s }
func (f fakeEvent) Port() uint8                { return 0 }
func (f fakeEvent) Ack() error                 { return nil }

// qpStateOf returns the state the inner QP q reports.
func qpStateOf(q verbs.QP) verbs.QPState {
	a, _ := qAttr(q)
	return a.QPState
}

// qpTarget returns where a modify of q with mask goes, and where it starts.
func qpTarget(q verbs.QP, attr *verbs.QPAttr, mask verbs.QPAttrMask) (from, to verbs.QPState) {
	from = qpStateOf(q)
	to = from
	if mask&verbs.QPAttrState != 0 {
		to = attr.QPState
	}
	return from, to
}

func einval(verb string) error { return verr.New(verb, syscall.EINVAL, "mutant: refused") }

// qpModifyMutant returns a mutant whose modify is f, with records kept.
func qpModifyMutant(name string, rules []string, f func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error) mutant {
	tr := newQPTracker()
	h := tr.hooks()
	h.modifyQP = func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error { return f(tr, q, a, m) }
	return mutant{name: name, rules: rules, h: h}
}

// qpHooksMutant returns a mutant made by edit from tracking hooks.
func qpHooksMutant(name string, rules []string, edit func(tr *qpTracker, h *hooks)) mutant {
	tr := newQPTracker()
	h := tr.hooks()
	edit(tr, &h)
	return mutant{name: name, rules: rules, h: h}
}

// qpPostRefused: a post hook that accepts (and drops) requests in the given
// state.
func qpDropIn(s verbs.QPState, post func(verbs.QP) (int, error), n int, q verbs.QP) (int, error) {
	if qpStateOf(q) == s {
		return n, nil
	}
	return post(q)
}

// qpMutants returns the mutants of the QP family.
func qpMutants() []mutant {
	def := sim.DefaultDeviceAttr()
	ms := []mutant{
		qpHooksMutant("every QP has qp_num 0x11", []string{"QP-01"}, func(tr *qpTracker, h *hooks) {
			h.qpNum = func(verbs.QP) uint32 { return 0x11 }
		}),
		qpHooksMutant("caps above the device's are cut to its limits", []string{"QP-02"}, func(tr *qpTracker, h *hooks) {
			create := h.createQP
			h.createQP = func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
				c := &a.Cap
				c.MaxSendWR, c.MaxRecvWR = min(c.MaxSendWR, uint32(def.MaxQPWR)), min(c.MaxRecvWR, uint32(def.MaxQPWR))
				c.MaxSendSGE, c.MaxRecvSGE = min(c.MaxSendSGE, uint32(def.MaxSGE)), min(c.MaxRecvSGE, uint32(def.MaxSGE))
				c.MaxInlineData = min(c.MaxInlineData, uint32(def.MaxInline))
				return create(pd, a)
			}
		}),
		qpHooksMutant("a missing CQ is replaced by the other one", []string{"QP-03"}, func(tr *qpTracker, h *hooks) {
			create := h.createQP
			h.createQP = func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
				if a.SendCQ == nil {
					a.SendCQ = a.RecvCQ
				}
				if a.RecvCQ == nil {
					a.RecvCQ = a.SendCQ
				}
				return create(pd, a)
			}
		}),
		qpHooksMutant("a UC QP created with an SRQ ignores it", []string{"QP-04"}, func(tr *qpTracker, h *hooks) {
			create := h.createQP
			h.createQP = func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
				if a.Type == verbs.QPTypeUC {
					a.SRQ = nil
				}
				return create(pd, a)
			}
		}),
		qpModifyMutant("qp_state UNKNOWN and beyond mean ERR", []string{"QP-06"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if m&verbs.QPAttrState != 0 && a.QPState >= verbs.QPStateUnknown && qpStateOf(q) != verbs.QPStateReset {
				b := *a
				b.QPState = verbs.QPStateErr
				return q.Modify(&b, verbs.QPAttrState)
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("RTR→RTR is accepted", []string{"QP-07"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); m&verbs.QPAttrState != 0 && from == verbs.QPStateRTR && to == verbs.QPStateRTR {
				return nil
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("SQD→SQD is refused", []string{"QP-07", "QP-19"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); m&verbs.QPAttrState != 0 && from == verbs.QPStateSQD && to == verbs.QPStateSQD {
				return einval("ibv_modify_qp")
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("RESET→ERR is accepted under the Linux reading", []string{"QP-08"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); from == verbs.QPStateReset && to == verbs.QPStateErr {
				return nil
			}
			return q.Modify(a, m)
		}),
		{
			name: "the profile allows RESET→ERR, the device does not", rules: []string{"QP-08"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.ResetToErr = true; return p }},
		},
		qpModifyMutant("moves to RESET and ERR drop the other bits", []string{"QP-09"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if m&verbs.QPAttrState != 0 && (a.QPState == verbs.QPStateReset || a.QPState == verbs.QPStateErr) {
				m = verbs.QPAttrState
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("bits a transition does not take are ignored", []string{"QP-10", "QP-21"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			if req, opt, ok := verbs.Transition(from, to, tr.info(q).init.Type, verbs.Readings{}); ok {
				m &= req | opt | verbs.QPAttrState
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("missing required bits are taken from attr anyway", []string{"QP-10", "QP-14", "QP-16", "QP-17"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			if req, _, ok := verbs.Transition(from, to, tr.info(q).init.Type, verbs.Readings{}); ok && m&verbs.QPAttrState != 0 {
				m |= req
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("an attribute-only modify in RTR succeeds and does nothing", []string{"QP-11"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if m&verbs.QPAttrState == 0 && qpStateOf(q) == verbs.QPStateRTR {
				return nil
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("CUR_STATE is ignored outside the way into RTS", []string{"QP-12"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if s := qpStateOf(q); s == verbs.QPStateReset || s == verbs.QPStateInit || s == verbs.QPStateErr {
				m &^= verbs.QPAttrCurState
			}
			return q.Modify(a, m)
		}),
		{
			name: "the profile trusts CUR_STATE, the device checks it", rules: []string{"QP-12"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.CurStateTrusted = true; return p }},
		},
		qpModifyMutant("a refused modify still sets qkey and access flags", []string{"QP-13"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			err := q.Modify(a, m)
			if err != nil {
				for _, b := range []verbs.QPAttrMask{verbs.QPAttrQKey, verbs.QPAttrAccessFlags} {
					if m&b != 0 {
						_ = q.Modify(a, b)
					}
				}
			}
			return err
		}),
		qpModifyMutant("UD refuses QKEY in INIT→INIT", []string{"QP-15"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); from == verbs.QPStateInit && to == verbs.QPStateInit && m&verbs.QPAttrQKey != 0 && tr.info(q).init.Type == verbs.QPTypeUD {
				return einval("ibv_modify_qp")
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("RC refuses MIN_RNR_TIMER in RTS→RTS", []string{"QP-18"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); from == verbs.QPStateRTS && to == verbs.QPStateRTS && m&verbs.QPAttrMinRNRTimer != 0 && tr.info(q).init.Type == verbs.QPTypeRC {
				return einval("ibv_modify_qp")
			}
			return q.Modify(a, m)
		}),
		qpModifyMutant("CAP and RATE_LIMIT are accepted and ignored", []string{"QP-21"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			return q.Modify(a, m&^(verbs.QPAttrCap|verbs.QPAttrRateLimit))
		}),
		qpModifyMutant("timeout above 31 is cut to 31", []string{"QP-22"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			b := *a
			b.Timeout = min(b.Timeout, 31)
			return q.Modify(&b, m)
		}),
		qpModifyMutant("path_mtu is cut to 1024 instead of checked against the port", []string{"QP-22"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			b := *a
			if b.PathMTU.Valid() && b.PathMTU > verbs.MTU1024 {
				b.PathMTU = verbs.MTU1024
			}
			return q.Modify(&b, m)
		}),
		qpHooksMutant("query says RTS while the QP is in SQD", []string{"QP-24"}, func(tr *qpTracker, h *hooks) {
			h.queryQP = func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, ia, err := q.Query(mask)
				if a.QPState == verbs.QPStateSQD {
					a.QPState = verbs.QPStateRTS
				}
				return a, ia, err
			}
		}),
	}

	// Posting.
	ms = append(ms,
		qpHooksMutant("receives are accepted in RESET and dropped", []string{"QP-25"}, func(tr *qpTracker, h *hooks) {
			post := h.postRecv
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				return qpDropIn(verbs.QPStateReset, func(q verbs.QP) (int, error) { return post(q, wrs) }, len(wrs), q)
			}
		}),
		qpHooksMutant("sends are accepted in RTR and dropped", []string{"QP-26"}, func(tr *qpTracker, h *hooks) {
			post := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				return qpDropIn(verbs.QPStateRTR, func(q verbs.QP) (int, error) { return post(q, wrs) }, len(wrs), q)
			}
		}),
		qpHooksMutant("a bad request is skipped and the rest of the list posted", []string{"QP-27"}, func(tr *qpTracker, h *hooks) {
			send, recv := h.postSend, h.postRecv
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				return postEach(len(wrs), func(i int) (int, error) { return send(q, wrs[i:i+1]) })
			}
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				return postEach(len(wrs), func(i int) (int, error) { return recv(q, wrs[i:i+1]) })
			}
		}),
		qpHooksMutant("a full queue is EAGAIN", []string{"QP-28", "QP-29", "QP-31"}, func(tr *qpTracker, h *hooks) {
			send, recv := h.postSend, h.postRecv
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) { return eagain(send(q, wrs)) }
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) { return eagain(recv(q, wrs)) }
		}),
		qpHooksMutant("slots are free once flushed, before the poll (QP-29 reading B)", []string{"QP-29", "QP-31"}, func(tr *qpTracker, h *hooks) {
			send, recv := h.postSend, h.postRecv
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				n, err := send(q, wrs)
				if errors.Is(err, syscall.ENOMEM) && qpStateOf(q) == verbs.QPStateErr {
					return len(wrs), nil
				}
				return n, err
			}
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				n, err := recv(q, wrs)
				if errors.Is(err, syscall.ENOMEM) && qpStateOf(q) == verbs.QPStateErr {
					return len(wrs), nil
				}
				return n, err
			}
		}),
		qpHooksMutant("send slots are free once completed, before the poll (QP-29 reading B)", []string{"QP-29"}, func(tr *qpTracker, h *hooks) {
			send := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				n, err := send(q, wrs)
				if errors.Is(err, syscall.ENOMEM) && qpStateOf(q) == verbs.QPStateRTS {
					if l, ok := tr.info(q).init.SendCQ.(interface{ Len() int }); ok && l.Len() > 0 {
						return len(wrs), nil // as if the completed sends had left the queue
					}
				}
				return n, err
			}
		}),
		// The other way round: a profile that says slots free on retire
		// (QP-29 reading B) on a device that frees them on poll, or only
		// its receive slots so.
		mutant{
			name:  "the profile says slots free on retire (QP-29 reading B), the device frees them on poll",
			rules: []string{"QP-29", "QP-30", "QP-31"},
			h:     hooks{profile: func(p verbs.Readings) verbs.Readings { p.FreeSlotOnRetire = true; return p }},
		},
		mutant{
			name:  "the device frees slots on retire (QP-29 reading B), the profile says on poll",
			rules: []string{"QP-29", "QP-30", "QP-31"},
			base:  slotsOnRetire,
			h:     hooks{profile: func(p verbs.Readings) verbs.Readings { p.FreeSlotOnRetire = false; return p }},
		},
		withBase(slotsOnRetire, qpHooksMutant("receive slots free on poll under reading B", []string{"QP-31"}, func(tr *qpTracker, h *hooks) {
			// held counts, by qp_num, the receives posted whose completion
			// has not been polled: reading A, kept by the mutant.
			held := map[uint32]int{}
			forget := func(q verbs.QP) {
				tr.mu.Lock()
				held[q.Num()] = 0
				tr.mu.Unlock()
			}
			create, recv := h.createQP, h.postRecv
			h.createQP = func(pd verbs.PD, a verbs.QPInitAttr) (verbs.QP, error) {
				q, err := create(pd, a)
				if err == nil && q != nil {
					forget(q)
				}
				return q, err
			}
			h.modifyQP = func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
				err := q.Modify(a, m)
				if err == nil && qpStateOf(q) == verbs.QPStateReset {
					forget(q) // FLUSH-08: a reset frees every slot
				}
				return err
			}
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				room := int(tr.info(q).cap.MaxRecvWR)
				tr.mu.Lock()
				room -= held[q.Num()]
				tr.mu.Unlock()
				n, err := recv(q, wrs[:max(0, min(room, len(wrs)))])
				tr.mu.Lock()
				held[q.Num()] += n
				tr.mu.Unlock()
				if err == nil && n < len(wrs) {
					err = verr.New("ibv_post_recv", syscall.ENOMEM, "mutant: receive completions not polled")
				}
				return n, err
			}
			h.poll = func(c verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := c.Poll(wcs)
				tr.mu.Lock()
				for _, w := range wcs[:max(n, 0)] {
					if tr.recv[wcKey{c, w.QPNum, w.WRID}] && held[w.QPNum] > 0 {
						held[w.QPNum]--
					}
				}
				tr.mu.Unlock()
				return n, err
			}
		})),
		qpHooksMutant("a receive without SGEs is refused", []string{"QP-32"}, func(tr *qpTracker, h *hooks) {
			recv := h.postRecv
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				for i, w := range wrs {
					if len(w.SGList) == 0 {
						if n, err := recv(q, wrs[:i]); err != nil {
							return n, err
						}
						return i, einval("ibv_post_recv")
					}
				}
				return recv(q, wrs)
			}
		}),
		mutant{name: "the device states the other reading of opcodes a transport does not take", rules: []string{"QP-33"}, h: hooks{
			profile: func(p verbs.Readings) verbs.Readings {
				p.TransportOpLocQPOp = !p.TransportOpLocQPOp
				return p
			}}},
		func() mutant {
			m := statusMutant(verbs.WCLocQPOpErr, verbs.WCSuccess, "QP-33")
			m.name, m.base = "under QP-33 reading B an opcode the transport does not take completes successfully", sim.RXEProfile()
			return m
		}(),
		qpHooksMutant("RDMA WRITE on UD is posted as a SEND", []string{"QP-33"}, func(tr *qpTracker, h *hooks) {
			send := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				if tr.info(q).init.Type == verbs.QPTypeUD {
					wrs = append([]verbs.SendWR(nil), wrs...)
					for i := range wrs {
						if wrs[i].Opcode == verbs.WRRDMAWrite {
							wrs[i].Opcode = verbs.WRSend
						}
					}
				}
				return send(q, wrs)
			}
		}),
		qpHooksMutant("INLINE on an RDMA READ is ignored", []string{"QP-34"}, func(tr *qpTracker, h *hooks) {
			send := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if wrs[i].Opcode == verbs.WRRDMARead {
						wrs[i].Flags &^= verbs.SendInline
					}
				}
				return send(q, wrs)
			}
		}),
		qpHooksMutant("an inline payload too long is sent from memory instead", []string{"QP-35"}, func(tr *qpTracker, h *hooks) {
			send := h.postSend
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				max := uint64(tr.info(q).cap.MaxInlineData)
				wrs = append([]verbs.SendWR(nil), wrs...)
				for i := range wrs {
					if verbs.SGEListLength(wrs[i].SGList) > max {
						wrs[i].Flags &^= verbs.SendInline
					}
				}
				return send(q, wrs)
			}
		}),
		qpHooksMutant("destroy flushes what is outstanding", []string{"QP-37"}, func(tr *qpTracker, h *hooks) {
			h.destroyQP = func(q verbs.QP, ctx context.Context) error {
				_ = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)
				return q.DestroyContext(ctx)
			}
		}),
	)
	return ms
}

// slotsOnRetire is the default profile with QP-29 reading B, the base of
// the mutants of that reading.
var slotsOnRetire = sim.Profile{Name: "slots-on-retire", Readings: verbs.Readings{FreeSlotOnRetire: true}}

// withBase returns m on a device with profile p.
func withBase(p sim.Profile, m mutant) mutant {
	m.base = p
	return m
}

// postEach posts n requests one at a time, skipping the ones refused, and
// reports the first refusal as if the list had stopped there.
func postEach(n int, one func(i int) (int, error)) (int, error) {
	first, firstErr := -1, error(nil)
	for i := range n {
		if _, err := one(i); err != nil && first < 0 {
			first, firstErr = i, err
		}
	}
	if first < 0 {
		return n, nil
	}
	return first, firstErr
}

// eagain turns ENOMEM into EAGAIN.
func eagain(n int, err error) (int, error) {
	if errors.Is(err, syscall.ENOMEM) {
		return n, verr.New("ibv_post", syscall.EAGAIN, "mutant: queue full")
	}
	return n, err
}

// TestQPCasesUnderOtherReadings runs the suite on the simulator under
// readings no built-in profile combines and requires every QP, FLUSH and SRQ
// case to pass: the cases follow whatever profile the device declares.
// (The other QP readings are covered by the built-in profiles: rxe trusts
// CUR_STATE and arms srq_limit at creation.) Slot reclaim on retire (QP-29
// B) is rxe's; here it meets the default reading of everything else.
func TestQPCasesUnderOtherReadings(t *testing.T) {
	t.Parallel()
	for _, p := range []sim.Profile{
		{Name: "ibta-reset-to-err", Readings: verbs.Readings{ResetToErr: true}},
		slotsOnRetire,
	} {
		t.Run(p.Name, func(t *testing.T) {
			for _, e := range qpFamilyFailures(conformance.Check(simdev.Factory(p))) {
				t.Error(e)
			}
		})
	}
}

// qpFamilyFailures returns the failures of err that come from cases of the
// QP, FLUSH and SRQ families or of ASYNC-14.
func qpFamilyFailures(err error) []error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []error
	for _, e := range errs {
		for _, p := range []string{"QP-", "FLUSH-", "SRQ-", "ASYNC-14 "} {
			if strings.HasPrefix(e.Error(), p) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}
