package conformance_test

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim/wc"
)

// Mutants of the CQ family.
func init() {
	mutants = append(mutants,
		mutant{
			name:  "cqe 0 accepted",
			rules: []string{"CQ-01"},
			h: hooks{createCQ: func(c conformance.Context, cqe int, cctx any, ch conformance.CompChannel, vec int) (conformance.CQ, error) {
				if cqe == 0 {
					cqe = 1
				}
				return c.CreateCQ(cqe, cctx, ch, vec)
			}},
		},
		mutant{
			name:  "poll returns newest first",
			rules: []string{"CQ-17"},
			h: hooks{poll: func(q conformance.CQ, wcs []wc.WC) (int, error) {
				n, err := q.Poll(wcs)
				for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
					wcs[i], wcs[j] = wcs[j], wcs[i]
				}
				return n, err
			}},
		},
	)
}
