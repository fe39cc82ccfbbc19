package soak

import (
	"strings"
	"testing"

	"github.com/verbsim/verbsim/verbs"
)

// TestLedgerCatches feeds the ledger completions by hand, without a
// fabric, and checks that it reports what a broken engine would do: a
// completion twice, one for a WR never posted, one on the wrong CQ or QP, a
// signaled WR skipped, an unsignaled WR that succeeds, a success after an
// error, and an error status nobody forced.
func TestLedgerCatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		wcs  func(q *qpState) []verbs.WC // the send queue holds WRs 0..3; 2 is unsignaled
		want string                      // "" means no violation
	}{
		{"in order", func(q *qpState) []verbs.WC { return []verbs.WC{ok(q, 0), ok(q, 1), ok(q, 3)} }, ""},
		{"flushed tail", func(q *qpState) []verbs.WC {
			return []verbs.WC{ok(q, 0), st(q, 1, verbs.WCRetryExcErr), st(q, 2, verbs.WCWRFlushErr), st(q, 3, verbs.WCWRFlushErr)}
		}, ""},
		{"twice", func(q *qpState) []verbs.WC { return []verbs.WC{ok(q, 0), ok(q, 1), ok(q, 1)} }, "completes again"},
		{"never posted", func(q *qpState) []verbs.WC { return []verbs.WC{ok(q, 4)} }, "only 4 were posted"},
		{"lost", func(q *qpState) []verbs.WC { return []verbs.WC{ok(q, 0), ok(q, 3)} }, "WR 1 (signaled"},
		{"unsignaled success", func(q *qpState) []verbs.WC { return []verbs.WC{ok(q, 0), ok(q, 1), ok(q, 2)} }, "unsignaled send WR 2"},
		{"success after error", func(q *qpState) []verbs.WC { return []verbs.WC{st(q, 0, verbs.WCRetryExcErr), ok(q, 1)} }, "succeeds after an error"},
		{"error after error", func(q *qpState) []verbs.WC {
			return []verbs.WC{st(q, 0, verbs.WCRetryExcErr), st(q, 1, verbs.WCRetryExcErr)}
		}, "only flushes may follow"},
		{"unforced status", func(q *qpState) []verbs.WC { return []verbs.WC{st(q, 0, verbs.WCBadRespErr)} }, "not forced"},
		{"other QP", func(q *qpState) []verbs.WC { w := ok(q, 0); w.QPNum++; return []verbs.WC{w} }, "names QP"},
		{"other round", func(q *qpState) []verbs.WC { w := ok(q, 0); w.WRID = wrid(99, false, 0); return []verbs.WC{w} }, "not in this round"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, q := ledgerRig()
			for _, w := range tc.wcs(q) {
				s.handle(c, &w)
			}
			got := ""
			if len(s.errs) > 0 {
				got = s.errs[0].Error()
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("violation %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// ledgerRig is a soak with one UD QP (UD so that no data check gets in
// the way) whose send queue holds four WRs, the third unsignaled.
func ledgerRig() (*soak, *cqState, *qpState) {
	s := &soak{forced: map[uint64][]verbs.WCStatus{}}
	c := &cqState{name: "cq"}
	q := &qpState{s: s, idx: 7, num: 0x42, typ: verbs.QPTypeUD, wake: make(chan struct{}, 1)}
	q.peer = q
	q.sq.cq, q.rq.cq = c, c
	q.sq.last.Store(-1)
	q.rq.last.Store(-1)
	for i := range 4 {
		q.sq.recs[i] = wrRec{seq: int64(i), op: opWrite, signaled: i != 2}
	}
	q.sq.posted.Store(4)
	s.round.Store(&roundQPs{base: 7, qps: []*qpState{q}})
	return s, c, q
}

func ok(q *qpState, seq int64) verbs.WC {
	return verbs.WC{WRID: wrid(q.idx, false, seq), QPNum: q.num, Status: verbs.WCSuccess, Opcode: verbs.WCRDMAWrite}
}

func st(q *qpState, seq int64, status verbs.WCStatus) verbs.WC {
	return verbs.WC{WRID: wrid(q.idx, false, seq), QPNum: q.num, Status: status}
}
