package cq_test

import (
	"slices"
	"testing"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/internal/cq"
	"github.com/verbsim/verbsim/verbs"
)

// TestPurgeQP: PurgeQPLocked deletes one QP's completions and keeps the
// others in order, also when the ring has wrapped (CQ-26 B).
func TestPurgeQP(t *testing.T) {
	w := newWorld()
	c := w.cq(t, cq.Config{CQE: 8})
	of := func(id uint64, qpn uint32) verbs.WC {
		return verbs.WC{WRID: id, Status: verbs.WCSuccess, Opcode: verbs.WCSend, QPNum: qpn}
	}
	// Wrap the ring: push and poll a few first.
	for i := uint64(0); i < 5; i++ {
		mustPush(t, c, of(100+i, 1))
	}
	if got := pollAll(t, c); len(got) != 5 {
		t.Fatalf("polled %v", got)
	}
	for i := uint64(1); i <= 7; i++ {
		mustPush(t, c, of(i, uint32(1+i%2))) // odd ids on QP 2
	}
	purge := func(qpn uint32) int {
		w.mu.Enter(domain.Op{})
		defer w.mu.Leave(domain.Op{}, nil)
		return c.PurgeQPLocked(qpn)
	}
	if n := purge(2); n != 4 {
		t.Errorf("purged %d completions of QP 2, want 4", n)
	}
	if n := purge(9); n != 0 {
		t.Errorf("purged %d completions of a QP with none", n)
	}
	if got, want := pollAll(t, c), []uint64{2, 4, 6}; !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	// The ring still works after the purge.
	mustPush(t, c, of(8, 1))
	if got := pollAll(t, c); !slices.Equal(got, []uint64{8}) {
		t.Errorf("after the purge: %v", got)
	}
	var nilCQ *cq.CQ
	if n := nilCQ.PurgeQPLocked(1); n != 0 {
		t.Errorf("nil CQ: %d", n)
	}
}
