package fuzz

import (
	"errors"
	"syscall"
	"testing"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// FuzzQueryInputs drives the query verbs with arbitrary masks, ports,
// indices, flags and table sizes (QUERY-01..06): no panic, only the
// documented errnos, every accepted QP mask returns the same attributes,
// and a GID entry read one by one is the one the table holds.
func FuzzQueryInputs(f *testing.F) {
	f.Add(uint32(0), uint32(1), uint32(0), uint32(0), 8, uint32(0))
	f.Add(uint32(verbs.QPAttrRateLimit), uint32(0), uint32(128), uint32(1), 0, uint32(1))
	f.Add(uint32(1<<21), uint32(2), uint32(1), uint32(0), -1, uint32(0))
	f.Fuzz(func(t *testing.T, mask, port, index, flags uint32, maxEntries int, compMask uint32) {
		fab, err := sim.NewFabric(sim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := fab.Devices()[0].Open()
		pd, _ := c.AllocPD()
		cq, _ := c.CreateCQ(4, nil, nil, 0)
		q, err := pd.CreateQP(sim.QPInitAttr{SendCQ: cq, RecvCQ: cq, Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		full, _, _ := q.Query(verbs.QueryableQPAttrs)
		a, _, err := q.Query(verbs.QPAttrMask(mask))
		switch {
		case verbs.QPAttrMask(mask)&^verbs.QueryableQPAttrs != 0:
			if !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Fatalf("Query(%#x) = %v, want EOPNOTSUPP", mask, err)
			}
		case err != nil || a != full:
			t.Fatalf("Query(%#x) = %+v, %v; want every attribute", mask, a, err)
		}
		if _, err := c.QueryDeviceEx(compMask); (err == nil) != (compMask == 0) {
			t.Fatalf("QueryDeviceEx(%#x) = %v", compMask, err)
		}
		g, err := c.QueryGIDEx(port, index, flags)
		if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENODATA) {
			t.Fatalf("QueryGIDEx(%d, %d, %#x) = %v", port, index, flags, err)
		}
		tbl, terr := c.QueryGIDTable(maxEntries, flags)
		if terr != nil && !errors.Is(terr, syscall.EINVAL) {
			t.Fatalf("QueryGIDTable(%d, %#x) = %v", maxEntries, flags, terr)
		}
		if err == nil && terr == nil {
			found := false
			for _, e := range tbl {
				found = found || e == g
			}
			if !found {
				t.Fatalf("entry %+v from QueryGIDEx is not in the table %+v", g, tbl)
			}
		}
		if _, err := pd.CreateQP(sim.QPInitAttr{}); err == nil {
			t.Fatal("CreateQP without CQs succeeded")
		}
	})
}
