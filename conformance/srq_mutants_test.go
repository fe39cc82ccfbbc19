package conformance_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// qpPollFilter returns a poll hook that drops the completions drop selects.
func qpPollFilter(drop func(c verbs.WC) bool) func(q verbs.CQ, wcs []verbs.WC) (int, error) {
	return func(q verbs.CQ, wcs []verbs.WC) (int, error) {
		n, err := q.Poll(wcs)
		k := 0
		for _, c := range wcs[:n] {
			if !drop(c) {
				wcs[k] = c
				k++
			}
		}
		return k, err
	}
}

func isFlush(c verbs.WC) bool { return c.Status == verbs.WCWRFlushErr }

// flushMutants returns the mutants of the FLUSH family and of the QP events
// (ASYNC-05, ASYNC-14).
func flushMutants() []mutant {
	return []mutant{
		qpHooksMutant("receive requests complete with LOC_QP_OP_ERR, not FLUSH_ERR", []string{"FLUSH-01", "WC-S05"}, func(tr *qpTracker, h *hooks) {
			h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				tr.mu.Lock()
				defer tr.mu.Unlock()
				for i, c := range wcs[:n] {
					if isFlush(c) && tr.recv[wcKey{q, c.QPNum, c.WRID}] {
						wcs[i].Status = verbs.WCLocQPOpErr
					}
				}
				return n, err
			}
		}),
		{
			name: "flush completions of one poll come last first", rules: []string{"FLUSH-02"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				var idx []int
				for i, c := range wcs[:n] {
					if isFlush(c) {
						idx = append(idx, i)
					}
				}
				for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
					wcs[idx[i]], wcs[idx[j]] = wcs[idx[j]], wcs[idx[i]]
				}
				return n, err
			}},
		},
		qpHooksMutant("unsignaled sends are not flushed", []string{"FLUSH-04"}, func(tr *qpTracker, h *hooks) {
			h.poll = func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				return qpPollFilter(func(c verbs.WC) bool {
					tr.mu.Lock()
					defer tr.mu.Unlock()
					return isFlush(c) && tr.unsig[wcKey{q, c.QPNum, c.WRID}]
				})(q, wcs)
			}
		}),
		{
			name: "sends posted in SQE are accepted and dropped", rules: []string{"WC-S05"},
			h: hooks{postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				return qpDropIn(verbs.QPStateSQE, func(q verbs.QP) (int, error) { return q.PostSend(wrs) }, len(wrs), q)
			}},
		},
		qpHooksMutant("requests posted in ERR are accepted and dropped", []string{"FLUSH-05", "WC-S05"}, func(tr *qpTracker, h *hooks) {
			send, recv := h.postSend, h.postRecv
			h.postSend = func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				return qpDropIn(verbs.QPStateErr, func(q verbs.QP) (int, error) { return send(q, wrs) }, len(wrs), q)
			}
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				return qpDropIn(verbs.QPStateErr, func(q verbs.QP) (int, error) { return recv(q, wrs) }, len(wrs), q)
			}
		}),
		{
			name: "flush completions carry qp_num 0", rules: []string{"FLUSH-06"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				for i := range wcs[:n] {
					if isFlush(wcs[i]) {
						wcs[i].QPNum = 0
					}
				}
				return n, err
			}},
		},
		qpModifyMutant("ERR of a QP on an SRQ flushes the SRQ's requests too", []string{"FLUSH-07"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			info := tr.info(q)
			if err != nil || to != verbs.QPStateErr || from == verbs.QPStateErr || info.init.SRQ == nil {
				return err
			}
			tr.mu.Lock()
			ids := tr.srqIDs[info.init.SRQ]
			tr.mu.Unlock()
			for _, id := range ids {
				_, _ = info.init.RecvCQ.(conformance.Injector).Push(verbs.WC{WRID: id, Status: verbs.WCWRFlushErr, QPNum: q.Num()}, true)
			}
			return nil
		}),
		qpModifyMutant("RESET flushes what is queued first", []string{"FLUSH-08"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			if from, to := qpTarget(q, a, m); to == verbs.QPStateReset && from != verbs.QPStateReset && from != verbs.QPStateErr {
				_ = q.Modify(&verbs.QPAttr{QPState: verbs.QPStateErr}, verbs.QPAttrState)
			}
			return q.Modify(a, m)
		}),
		{
			name: "flush completions never come", rules: []string{"FLUSH-13"},
			h: hooks{poll: qpPollFilter(isFlush)},
		},
		qpModifyMutant("ERR by modify raises QP_FATAL", []string{"FLUSH-14"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			if err == nil && to == verbs.QPStateErr && from != verbs.QPStateErr {
				tr.fake(verbs.EventQPFatal, q)
			}
			return err
		}),
		{
			name: "LAST_WQE_REACHED is never delivered", rules: []string{"ASYNC-14", "FLUSH-14"},
			h: hooks{
				getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
					for {
						ev, err := c.GetAsyncEvent(ctx)
						if err != nil || ev.EventType() != verbs.EventQPLastWQEReached {
							return ev, err
						}
						_ = ev.Ack()
					}
				},
				tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
					for {
						ev, err := c.TryGetAsyncEvent()
						if err != nil || ev.EventType() != verbs.EventQPLastWQEReached {
							return ev, err
						}
						_ = ev.Ack()
					}
				},
			},
		},
		qpHooksMutant("destroying a QP does not wait for acks", []string{"ASYNC-05"}, func(tr *qpTracker, h *hooks) {
			h.destroyQP = func(q verbs.QP, ctx context.Context) error {
				done, cancel := context.WithCancel(ctx)
				cancel()
				if err := q.DestroyContext(done); err != nil && !errors.Is(err, syscall.EINTR) {
					return err
				}
				return nil
			}
		}),
	}
}

// skipEvents returns async hooks that ack and hide every event of type typ.
func skipEvents(typ verbs.EventType) (
	func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error),
	func(c verbs.Context) (verbs.AsyncEvent, error),
) {
	get := func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
		for {
			ev, err := c.GetAsyncEvent(ctx)
			if err != nil || ev.EventType() != typ {
				return ev, err
			}
			_ = ev.Ack()
		}
	}
	try := func(c verbs.Context) (verbs.AsyncEvent, error) {
		for {
			ev, err := c.TryGetAsyncEvent()
			if err != nil || ev.EventType() != typ {
				return ev, err
			}
			_ = ev.Ack()
		}
	}
	return get, try
}

// sqDrainedMutants returns the mutants of SQ_DRAINED (ASYNC-13) and of the
// profile's reading of it.
func sqDrainedMutants() []mutant {
	noDrained := mutant{name: "SQ_DRAINED is never delivered", rules: []string{"ASYNC-13"}}
	noDrained.h.getAsync, noDrained.h.tryAsync = skipEvents(verbs.EventSQDrained)
	return []mutant{
		noDrained,
		{
			name: "the device raises SQ_DRAINED unasked, the profile says it does not", rules: []string{"ASYNC-13", "FLUSH-14"},
			base: sim.Profile{Name: "always-sq-drained", Readings: verbs.Readings{AlwaysSQDrained: true}},
			h:    hooks{profile: func(p verbs.Readings) verbs.Readings { p.AlwaysSQDrained = false; return p }},
		},
		{
			name: "the profile says SQ_DRAINED comes unasked, the device raises it only when asked", rules: []string{"ASYNC-13"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.AlwaysSQDrained = true; return p }},
		},
		qpModifyMutant("SQ_DRAINED comes at once, before the sends in flight complete", []string{"ASYNC-13"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			if err == nil && from == verbs.QPStateRTS && to == verbs.QPStateSQD && m&verbs.QPAttrEnSQDAsyncNotify != 0 && a.EnSQDAsyncNotify {
				if got, qerr := qAttr(q); qerr == nil && got.SQDraining {
					tr.fake(verbs.EventSQDrained, q)
				}
			}
			return err
		}),
	}
}

// srqMutants returns the mutants of the SRQ family.
func srqMutants() []mutant {
	def := sim.DefaultDeviceAttr()
	srqModify := func(name string, rules []string, f func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error) mutant {
		return qpHooksMutant(name, rules, func(tr *qpTracker, h *hooks) {
			h.modifySRQ = func(s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error { return f(tr, s, a, m) }
		})
	}
	return []mutant{
		{
			name: "SRQ sizes above the device's are cut to its limits", rules: []string{"SRQ-01"},
			h: hooks{createSRQ: func(pd verbs.PD, a verbs.SRQInitAttr) (verbs.SRQ, error) {
				a.Attr.MaxWR, a.Attr.MaxSGE = min(a.Attr.MaxWR, uint32(def.MaxSRQWR)), min(a.Attr.MaxSGE, uint32(def.MaxSRQSGE))
				return pd.CreateSRQ(a)
			}},
		},
		{
			name: "the profile says srq_limit arms at create, the device ignores it", rules: []string{"SRQ-01"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.SRQLimitAtCreate = true; return p }},
		},
		qpHooksMutant("an SRQ post skips a bad request and posts the rest", []string{"SRQ-02"}, func(tr *qpTracker, h *hooks) {
			post := h.postSRQ
			h.postSRQ = func(s verbs.SRQ, wrs []verbs.RecvWR) (int, error) {
				return postEach(len(wrs), func(i int) (int, error) { return post(s, wrs[i:i+1]) })
			}
		}),
		qpHooksMutant("ibv_post_recv on a QP on an SRQ is accepted and dropped", []string{"SRQ-03"}, func(tr *qpTracker, h *hooks) {
			post := h.postRecv
			h.postRecv = func(q verbs.QP, wrs []verbs.RecvWR) (int, error) {
				if tr.info(q).init.SRQ != nil && qpStateOf(q) != verbs.QPStateReset {
					return len(wrs), nil
				}
				return post(q, wrs)
			}
		}),
		srqModify("IBV_SRQ_LIMIT is accepted and ignored", []string{"SRQ-04", "SRQ-05"}, func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
			if m&^verbs.SRQLimit == 0 {
				return nil
			}
			return s.Modify(a, m&^verbs.SRQLimit)
		}),
		srqModify("a limit above max_wr is cut to max_wr", []string{"SRQ-06"}, func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
			if cur, err := s.Query(); err == nil && m == verbs.SRQLimit && a.SRQLimit > cur.MaxWR {
				b := *a
				b.SRQLimit = cur.MaxWR
				return s.Modify(&b, m)
			}
			return s.Modify(a, m)
		}),
		srqModify("a resize sticks when the limit beside it is refused", []string{"SRQ-06"}, func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
			err := s.Modify(a, m)
			if err != nil && m == verbs.SRQMaxWR|verbs.SRQLimit {
				_ = s.Modify(a, verbs.SRQMaxWR)
			}
			return err
		}),
		{
			name: "the device resizes SRQs but does not say so", rules: []string{"SRQ-07"},
			h: hooks{deviceAttr: func(a verbs.DeviceAttr) verbs.DeviceAttr { a.DeviceCapFlags &^= verbs.DeviceSRQResize; return a }},
		},
		srqModify("a resize below the queued requests succeeds and does nothing", []string{"SRQ-07"}, func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
			if err := s.Modify(a, m); err != nil && m != verbs.SRQMaxWR {
				return err
			}
			return nil
		}),
		qpHooksMutant("an SRQ with QPs attached can be destroyed", []string{"SRQ-10"}, func(tr *qpTracker, h *hooks) {
			h.destroySRQ = func(s verbs.SRQ, ctx context.Context) error {
				if err := s.DestroyContext(ctx); !errors.Is(err, syscall.EBUSY) {
					return err
				}
				return nil
			}
		}),
		qpHooksMutant("the limit fires when the fill level reaches it, not below", []string{"SRQ-04"}, func(tr *qpTracker, h *hooks) {
			h.takeSRQ = func(s verbs.SRQ) (uint64, []verbs.SGE, bool) {
				id, sges, ok := s.(conformance.Consumer).Take()
				a, err := s.Query()
				if ok && err == nil && a.SRQLimit > 0 && uint32(s.(conformance.Depth).Len()) == a.SRQLimit {
					_ = s.Modify(&verbs.SRQAttr{}, verbs.SRQLimit)
					tr.fake(verbs.EventSRQLimitReached, s)
				}
				return id, sges, ok
			}
		}),
		qpHooksMutant("query still shows a limit that fired", []string{"SRQ-05"}, func(tr *qpTracker, h *hooks) {
			armed := map[verbs.SRQ]uint32{}
			h.modifySRQ = func(s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
				err := s.Modify(a, m)
				if err == nil && m&verbs.SRQLimit != 0 {
					tr.mu.Lock()
					armed[s] = a.SRQLimit
					tr.mu.Unlock()
				}
				return err
			}
			h.querySRQ = func(s verbs.SRQ) (verbs.SRQAttr, error) {
				a, err := s.Query()
				tr.mu.Lock()
				defer tr.mu.Unlock()
				if a.SRQLimit == 0 {
					a.SRQLimit = armed[s]
				}
				return a, err
			}
		}),
		qpHooksMutant("requests leave the SRQ newest first", []string{"SRQ-08"}, func(tr *qpTracker, h *hooks) {
			h.takeSRQ = func(s verbs.SRQ) (uint64, []verbs.SGE, bool) {
				c := s.(conformance.Consumer)
				var all []verbs.RecvWR
				for {
					id, sges, ok := c.Take()
					if !ok {
						break
					}
					all = append(all, verbs.RecvWR{WRID: id, SGList: sges})
				}
				if len(all) == 0 {
					return 0, nil, false
				}
				last := all[len(all)-1]
				_, _ = s.PostRecv(all[:len(all)-1])
				return last.WRID, last.SGList, true
			}
		}),
		{
			name: "SRQ_LIMIT_REACHED names no SRQ", rules: []string{"ASYNC-15"},
			h: hooks{tryAsync: func(c verbs.Context) (verbs.AsyncEvent, error) {
				return anonymousSRQEvent(c.TryGetAsyncEvent())
			}, getAsync: func(c verbs.Context, ctx context.Context) (verbs.AsyncEvent, error) {
				return anonymousSRQEvent(c.GetAsyncEvent(ctx))
			}},
		},
		qpHooksMutant("destroying an SRQ does not wait for acks", []string{"ASYNC-05"}, func(tr *qpTracker, h *hooks) {
			h.destroySRQ = func(s verbs.SRQ, ctx context.Context) error {
				done, cancel := context.WithCancel(ctx)
				cancel()
				if err := s.DestroyContext(done); err != nil && !errors.Is(err, syscall.EINTR) {
					return err
				}
				return nil
			}
		}),
		srqModify("arming above the fill level fires at once", []string{"SRQ-11"}, func(tr *qpTracker, s verbs.SRQ, a *verbs.SRQAttr, m verbs.SRQAttrMask) error {
			err := s.Modify(a, m)
			tr.mu.Lock()
			queued := uint32(len(tr.srqIDs[s]))
			tr.mu.Unlock()
			if err == nil && m&verbs.SRQLimit != 0 && a.SRQLimit > queued {
				tr.fake(verbs.EventSRQLimitReached, s)
			}
			return err
		}),
	}
}

// anonymousSRQEvent hides the SRQ an SRQ_LIMIT_REACHED names.
func anonymousSRQEvent(ev verbs.AsyncEvent, err error) (verbs.AsyncEvent, error) {
	if err != nil || ev.EventType() != verbs.EventSRQLimitReached {
		return ev, err
	}
	_ = ev.Ack()
	return fakeEvent{verbs.EventSRQLimitReached, nil}, nil
}

// TestQPCasesToleratePollQuirks runs the suite on a device whose CQs return
// nothing on every other poll, as a device does whose flushes are still
// under way (FLUSH-13), and scramble the fields an error completion leaves
// undefined (FLUSH-06, as TestSuiteReadsFourFieldsOfErrors_WC03_WC14 does
// for the whole suite). No case of the QP, FLUSH or SRQ families may fail:
// they wait for flushes without assuming they are immediate, and read
// nothing of a flush completion but wr_id, status and qp_num.
func TestQPCasesToleratePollQuirks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex // some cases poll from several goroutines
	calls := map[verbs.CQ]int{}
	rng := rand.New(rand.NewPCG(3, 13))
	m := mutant{name: "slow, scrambling polls", h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
		mu.Lock()
		calls[q]++
		skip := calls[q]%2 == 1
		mu.Unlock()
		if skip {
			return 0, nil
		}
		n, err := q.Poll(wcs)
		mu.Lock()
		defer mu.Unlock()
		for i := range wcs[:n] {
			scramble(rng, &wcs[i])
		}
		return n, err
	}}}
	for _, e := range qpFamilyFailures(conformance.Check(m.factory())) {
		t.Error(e)
	}
}
