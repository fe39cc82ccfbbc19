package conformance_test

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// avMutants returns the mutants of the AV family: address vectors that slip
// through, or the wrong errno.
func avMutants() []mutant {
	// avModify rewrites the vectors of a modify before the real one runs.
	avModify := func(f func(av *verbs.AHAttr)) hooks {
		return hooks{modifyQP: func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
			b := *a
			if m&verbs.QPAttrAV != 0 {
				f(&b.AHAttr)
			}
			if m&verbs.QPAttrAltPath != 0 {
				f(&b.AltAHAttr)
			}
			return q.Modify(&b, m)
		}}
	}
	return []mutant{
		{
			// A device that does not look at a UD send's AH when it is
			// posted loses the request instead (the post says it took it).
			name: "a UD send through a refused AH is reported posted and dropped", rules: []string{"AV-04"},
			h: hooks{postSend: func(q verbs.QP, wrs []verbs.SendWR) (int, error) {
				n, err := q.PostSend(wrs)
				if errors.Is(err, syscall.EINVAL) && n < len(wrs) && wrs[n].AH != nil {
					m, err := q.PostSend(wrs[n+1:])
					return n + 1 + m, err
				}
				return n, err
			}},
		},
		{
			name: "ibv_create_ah drops the traffic class, hop limit and flow label", rules: []string{"AV-05"},
			h: hooks{createAH: func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error) {
				attr.GRH.TrafficClass, attr.GRH.HopLimit, attr.GRH.FlowLabel = 0, 64, 0
				return pd.CreateAH(attr)
			}},
		},
		{
			name: "the device states the other flow-label reading", rules: []string{"AV-05"},
			h: hooks{profile: func(p verbs.Readings) verbs.Readings { p.NoFlowLabel = !p.NoFlowLabel; return p }},
		},
		{
			name: "ibv_create_ah keeps the low 4 bits of sl 16", rules: []string{"AV-03"},
			h: hooks{createAH: func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error) {
				attr.SL &= 0xf
				return pd.CreateAH(attr)
			}},
		},
		{
			name: "ibv_modify_qp does not look at a path's static_rate", rules: []string{"AV-03"},
			h: avModify(func(av *verbs.AHAttr) { av.StaticRate = 0 }),
		},
		{
			name: "ibv_modify_qp takes dlid 0 on an InfiniBand path", rules: []string{"AV-03"},
			h: avModify(func(av *verbs.AHAttr) {
				if av.DLID == 0 {
					av.DLID = 1
				}
			}),
		},
		{
			name: "an unused GID entry is EINVAL, not ENODATA", rules: []string{"AV-02"},
			h: hooks{
				createAH: func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error) {
					ah, err := pd.CreateAH(attr)
					if errors.Is(err, syscall.ENODATA) {
						err = verr.New("ibv_create_ah", syscall.EINVAL, "mutant")
					}
					return ah, err
				},
				modifyQP: func(q verbs.QP, a *verbs.QPAttr, m verbs.QPAttrMask) error {
					err := q.Modify(a, m)
					if errors.Is(err, syscall.ENODATA) {
						err = verr.New("ibv_modify_qp", syscall.EINVAL, "mutant")
					}
					return err
				},
			},
		},
		{
			name: "ibv_create_ah takes a port past the last as port 1", rules: []string{"AV-01"},
			h: hooks{createAH: func(pd verbs.PD, attr verbs.AHAttr) (verbs.AH, error) {
				if attr.PortNum > 1 {
					attr.PortNum = 1
				}
				return pd.CreateAH(attr)
			}},
		},
		{
			name: "ibv_modify_qp takes a path's port_num 0 as port 1", rules: []string{"AV-01"},
			h: avModify(func(av *verbs.AHAttr) {
				if av.PortNum == 0 {
					av.PortNum = 1
				}
			}),
		},
	}
}
