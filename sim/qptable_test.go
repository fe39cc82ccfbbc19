package sim

import (
	"testing"

	"github.com/verbsim/verbsim/sim/internal/qp"
)

// TestQPTable: the directly indexed QP-number table finds what was set,
// forgets what was deleted, drops a page with its last QP, and answers nil
// for numbers beyond its directory.
func TestQPTable(t *testing.T) {
	var tab qpTable
	qs := make([]*qp.QP, 4)
	for i := range qs {
		qs[i] = new(qp.QP)
	}
	nums := []uint32{0x11, 0x12, 0x11 + qpPageLen, 0xffffff}
	for i, n := range nums {
		tab.set(n, qs[i])
	}
	for i, n := range nums {
		if got := tab.get(n); got != qs[i] {
			t.Fatalf("get(%#x) = %p, want %p", n, got, qs[i])
		}
	}
	if tab.get(0x13) != nil || tab.get(0x1000000) != nil {
		t.Fatal("a number never set is found")
	}
	tab.del(0x11 + qpPageLen)
	if tab.get(0x11+qpPageLen) != nil || tab.pages[(0x11+qpPageLen)/qpPageLen] != nil {
		t.Fatal("the page of a deleted last QP is kept")
	}
	tab.del(0x11)
	if tab.get(0x11) != nil || tab.get(0x12) != qs[1] {
		t.Fatal("del removed the wrong QP")
	}
	tab.del(0x5000) // beyond the directory: nothing
	tab.del(0x13)   // never set: nothing
	if tab.get(0x12) != qs[1] {
		t.Fatal("del of an unknown number changed the table")
	}
}
