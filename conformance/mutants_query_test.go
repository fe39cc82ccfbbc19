package conformance_test

import (
	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/qp"
	"github.com/verbsim/verbsim/verbs"
)

// The query capabilities of the wrapped device, each with its hook.

// QueryMask implements conformance.QPMaskQuerier.
func (q *mQP) QueryMask(mask verbs.QPAttrMask) (verbs.QPAttr, conformance.QPQueryInit, error) {
	if q.h.queryMask != nil {
		return q.h.queryMask(q.inner, mask)
	}
	return q.inner.(conformance.QPMaskQuerier).QueryMask(mask)
}

// QueryDeviceEx implements conformance.DeviceQuerier.
func (c *mContext) QueryDeviceEx(compMask uint32) (conformance.DeviceAttrEx, error) {
	if c.h.queryDevEx != nil {
		return c.h.queryDevEx(c.inner, compMask)
	}
	return c.inner.(conformance.DeviceQuerier).QueryDeviceEx(compMask)
}

// QueryPortEx implements conformance.DeviceQuerier.
func (c *mContext) QueryPortEx(port uint8) (conformance.PortAttrEx, error) {
	if c.h.queryPortEx != nil {
		return c.h.queryPortEx(c.inner, port)
	}
	return c.inner.(conformance.DeviceQuerier).QueryPortEx(port)
}

// QueryGIDEx implements conformance.DeviceQuerier.
func (c *mContext) QueryGIDEx(port, index, flags uint32) (conformance.GIDEntry, error) {
	if c.h.queryGIDEx != nil {
		return c.h.queryGIDEx(c.inner, port, index, flags)
	}
	return c.inner.(conformance.DeviceQuerier).QueryGIDEx(port, index, flags)
}

// QueryGIDTable implements conformance.DeviceQuerier.
func (c *mContext) QueryGIDTable(maxEntries int, flags uint32) ([]conformance.GIDEntry, error) {
	if c.h.queryGIDTable != nil {
		return c.h.queryGIDTable(c.inner, maxEntries, flags)
	}
	return c.inner.(conformance.DeviceQuerier).QueryGIDTable(maxEntries, flags)
}

// GetSRQNum implements conformance.SRQNumGetter.
func (s *mSRQ) GetSRQNum() (uint32, error) {
	if s.h.getSRQNum != nil {
		return s.h.getSRQNum(s.inner)
	}
	return s.inner.(conformance.SRQNumGetter).GetSRQNum()
}

// Mutants of the QUERY family.
func init() {
	mutants = append(mutants,
		mutant{
			name: "ibv_query_qp honours the mask strictly: unasked attributes read zero", rules: []string{"QUERY-01"},
			h: hooks{queryMask: func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, conformance.QPQueryInit, error) {
				a, init, err := q.(conformance.QPMaskQuerier).QueryMask(mask)
				if mask&verbs.QPAttrAccessFlags == 0 {
					a.QPAccessFlags = 0
				}
				if mask&verbs.QPAttrCap == 0 {
					a.Cap = verbs.QPCap{}
				}
				return a, init, err
			}},
		},
		mutant{
			name: "ibv_query_qp's init_attr loses sq_sig_all", rules: []string{"QUERY-01"},
			h: hooks{queryMask: func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, conformance.QPQueryInit, error) {
				a, init, err := q.(conformance.QPMaskQuerier).QueryMask(mask)
				init.SQSigAll = false
				return a, init, err
			}},
		},
		mutant{
			name: "ibv_query_qp accepts IBV_QP_RATE_LIMIT", rules: []string{"QUERY-02"},
			h: hooks{queryMask: func(q conformance.QP, mask verbs.QPAttrMask) (verbs.QPAttr, conformance.QPQueryInit, error) {
				return q.(conformance.QPMaskQuerier).QueryMask(mask & qp.QueryMaskAll)
			}},
		},
		mutant{
			name: "ibv_query_device_ex ignores the input comp_mask", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c conformance.Context, _ uint32) (conformance.DeviceAttrEx, error) {
				return c.(conformance.DeviceQuerier).QueryDeviceEx(0)
			}},
		},
		mutant{
			name: "ibv_query_device_ex reports phys_port_cnt_ex 0", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c conformance.Context, m uint32) (conformance.DeviceAttrEx, error) {
				a, err := c.(conformance.DeviceQuerier).QueryDeviceEx(m)
				a.PhysPortCntEx = 0
				return a, err
			}},
		},
		mutant{
			name: "ibv_query_device_ex reports no timestamp clock though CQs timestamp", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c conformance.Context, m uint32) (conformance.DeviceAttrEx, error) {
				a, err := c.(conformance.DeviceQuerier).QueryDeviceEx(m)
				a.CompletionTimestampMask, a.HCACoreClock = 0, 0
				return a, err
			}},
		},
		mutant{
			name: "ibv_query_device_ex reports a timestamp clock on rxe, which has none", rules: []string{"QUERY-03"},
			base: sim.RXEProfile(),
			h: hooks{queryDevEx: func(c conformance.Context, m uint32) (conformance.DeviceAttrEx, error) {
				a, err := c.(conformance.DeviceQuerier).QueryDeviceEx(m)
				a.CompletionTimestampMask, a.HCACoreClock = 1<<48-1, 1e6
				return a, err
			}},
		},
		mutant{
			name: "phys_state stays LINK_UP when the port goes down", rules: []string{"QUERY-04"},
			h: hooks{queryPortEx: func(c conformance.Context, port uint8) (conformance.PortAttrEx, error) {
				p, err := c.(conformance.DeviceQuerier).QueryPortEx(port)
				p.PhysState = 5
				return p, err
			}},
		},
		mutant{
			name: "ibv_query_gid_ex reads an empty entry as the zero GID", rules: []string{"QUERY-05"},
			h: hooks{queryGIDEx: func(c conformance.Context, port, index, flags uint32) (conformance.GIDEntry, error) {
				g, err := c.(conformance.DeviceQuerier).QueryGIDEx(port, index, flags)
				if err != nil && index > 0 && port == 1 && flags == 0 && index < 128 {
					return conformance.GIDEntry{GIDIndex: index, PortNum: port}, nil
				}
				return g, err
			}},
		},
		mutant{
			name: "ibv_query_gid_ex reports every GID as RoCE v2", rules: []string{"QUERY-05"},
			h: hooks{queryGIDEx: func(c conformance.Context, port, index, flags uint32) (conformance.GIDEntry, error) {
				g, err := c.(conformance.DeviceQuerier).QueryGIDEx(port, index, flags)
				g.GIDType = 2
				return g, err
			}},
		},
		mutant{
			name: "ibv_query_gid_table truncates to max_entries instead of failing", rules: []string{"QUERY-06"},
			h: hooks{queryGIDTable: func(c conformance.Context, maxEntries int, flags uint32) ([]conformance.GIDEntry, error) {
				all, err := c.(conformance.DeviceQuerier).QueryGIDTable(1<<16, flags)
				if err != nil || maxEntries <= 0 {
					return nil, err
				}
				return all[:min(len(all), maxEntries)], nil
			}},
		},
		mutant{
			name: "ibv_get_srq_num returns a number for a basic SRQ", rules: []string{"QUERY-07"},
			h: hooks{getSRQNum: func(conformance.SRQ) (uint32, error) { return 1, nil }},
		},
	)
}
