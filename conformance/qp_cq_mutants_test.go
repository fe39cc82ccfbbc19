package conformance_test

import (
	"context"
	"sync"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/verbs"
)

// Mutants of the cases where CQs meet QPs (CQ-07, CQ-25, CQ-26, NOTIFY-18
// with QPs), and the QP mutants the state machine must catch as well.

// sharedCQs returns the inner CQs of the inner QP q, each once.
func sharedCQs(tr *qpTracker, q verbs.QP) []verbs.CQ {
	init := tr.info(q).init
	if init.SendCQ == nil {
		return nil
	}
	if init.RecvCQ == init.SendCQ || init.RecvCQ == nil {
		return []verbs.CQ{init.SendCQ}
	}
	return []verbs.CQ{init.SendCQ, init.RecvCQ}
}

// rewriteFlushes takes every completion out of the inner CQ c and puts back, in
// order, what edit makes of each (dropping those for which it says false).
func rewriteFlushes(c verbs.CQ, edit func(i int, w verbs.WC, all []verbs.WC) (verbs.WC, bool)) {
	var all []verbs.WC
	buf := make([]verbs.WC, 16)
	for range 1 << 12 {
		n, _ := c.Poll(buf)
		if n == 0 {
			break
		}
		all = append(all, buf[:n]...)
	}
	in := c.(conformance.Injector)
	for i, w := range all {
		if w2, keep := edit(i, w, all); keep {
			_, _ = in.Push(w2, false)
		}
	}
}

// lastOf returns the index of the last completion of all that names qpn,
// or -1.
func lastOf(all []verbs.WC, qpn uint32) int {
	last := -1
	for i, w := range all {
		if w.QPNum == qpn {
			last = i
		}
	}
	return last
}

// qpcqMutants returns the mutants of CQ-07, CQ-25, CQ-26 and NOTIFY-18.
func qpcqMutants() []mutant {
	var firstMu sync.Mutex
	first := map[verbs.CQ]uint32{} // the qp_num of the first flush each CQ gave
	return []mutant{
		{
			name: "a CQ fed by several QPs names the first of them in every flush", rules: []string{"CQ-07"},
			h: hooks{poll: func(q verbs.CQ, wcs []verbs.WC) (int, error) {
				n, err := q.Poll(wcs)
				firstMu.Lock()
				defer firstMu.Unlock()
				for i := range wcs[:n] {
					if !isFlush(wcs[i]) {
						continue
					}
					if f, ok := first[q]; ok {
						wcs[i].QPNum = f
					} else {
						first[q] = wcs[i].QPNum
					}
				}
				return n, err
			}},
		},
		qpModifyMutant("a flush that fills the CQ to cqe overruns it", []string{"CQ-25"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			if err != nil || to != verbs.QPStateErr || from == verbs.QPStateErr {
				return err
			}
			for _, c := range sharedCQs(tr, q) {
				if l, ok := c.(interface{ Len() int }); ok && l.Len() == c.CQE() {
					_, _ = c.(conformance.Injector).Push(verbs.WC{WRID: 0xf111ed, Status: verbs.WCWRFlushErr, QPNum: q.Num()}, false)
				}
			}
			return nil
		}),
		qpModifyMutant("RESET removes the newest completion of the QP from its CQs", []string{"CQ-26"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			_, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			if err != nil || to != verbs.QPStateReset {
				return err
			}
			num := q.Num()
			for _, c := range sharedCQs(tr, q) {
				rewriteFlushes(c, func(i int, w verbs.WC, all []verbs.WC) (verbs.WC, bool) { return w, i != lastOf(all, num) })
			}
			return nil
		}),
		qpHooksMutant("destroy leaves the QP's completions with qp_num 0", []string{"CQ-26"}, func(tr *qpTracker, h *hooks) {
			destroy := h.destroyQP
			h.destroyQP = func(q verbs.QP, ctx context.Context) error {
				num, cqs := q.Num(), sharedCQs(tr, q)
				var err error
				if destroy != nil {
					err = destroy(q, ctx)
				} else {
					err = q.DestroyContext(ctx)
				}
				if err == nil {
					for _, c := range cqs {
						rewriteFlushes(c, func(_ int, w verbs.WC, _ []verbs.WC) (verbs.WC, bool) {
							if w.QPNum == num {
								w.QPNum = 0
							}
							return w, true
						})
					}
				}
				return err
			}
		}),
		qpModifyMutant("a flush re-arms the CQs it fed", []string{"NOTIFY-18"}, func(tr *qpTracker, q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			from, to := qpTarget(q, a, m)
			err := q.Modify(a, m)
			if err == nil && to == verbs.QPStateErr && from != verbs.QPStateErr {
				for _, c := range sharedCQs(tr, q) {
					_ = c.ReqNotify(false)
				}
			}
			return err
		}),
	}
}

// smQPMutants are mutants of the QP posting and flush rules that the state
// machine, not only the suite, must catch: the machine compares every flush
// completion and every post with the model, and the queues of a QP that
// reports them (conformance.Outstander) after every step.
func smQPMutants() []mutant {
	out := []mutant{{
		name: "outstanding counts swap the queues", rules: []string{"FLUSH-01", "FLUSH-08"},
		h: hooks{outstanding: func(q verbs.QP) (int, int) {
			s, r := q.(conformance.Outstander).Outstanding()
			return r, s
		}},
	}}
	for _, name := range []string{
		"unsignaled sends are not flushed",                                                       // FLUSH-04
		"requests posted in ERR are accepted and dropped",                                        // FLUSH-05
		"RESET flushes what is queued first",                                                     // FLUSH-08
		"slots are free once flushed, before the poll (QP-29 reading B)",                         // QP-29
		"the profile says slots free on retire (QP-29 reading B), the device frees them on poll", // QP-29
		"the device frees slots on retire (QP-29 reading B), the profile says on poll",           // QP-29
		"RTR→RTR is accepted",                                                                    // QP-07
		"a CQ fed by several QPs names the first of them in every flush",                         // CQ-07
		"RESET removes the newest completion of the QP from its CQs",                             // CQ-26
	} {
		found := false
		for _, m := range mutants {
			if m.name == name {
				out, found = append(out, m), true
				break
			}
		}
		if !found {
			panic("smQPMutants: no mutant named " + name)
		}
	}
	return out
}
