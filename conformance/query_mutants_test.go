package conformance_test

import (
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// The extended queries of the wrapped device (verbs.ExQuerier), each with
// its hook.

// QueryDeviceEx implements verbs.ExQuerier.
func (c *mContext) QueryDeviceEx(compMask uint32) (verbs.DeviceAttrEx, error) {
	if c.h.queryDevEx != nil {
		return c.h.queryDevEx(c.inner, compMask)
	}
	return c.inner.(verbs.ExQuerier).QueryDeviceEx(compMask)
}

// QueryGIDEx implements verbs.ExQuerier.
func (c *mContext) QueryGIDEx(port, index, flags uint32) (verbs.GIDEntry, error) {
	if c.h.queryGIDEx != nil {
		return c.h.queryGIDEx(c.inner, port, index, flags)
	}
	return c.inner.(verbs.ExQuerier).QueryGIDEx(port, index, flags)
}

// QueryGIDTable implements verbs.ExQuerier.
func (c *mContext) QueryGIDTable(maxEntries int, flags uint32) ([]verbs.GIDEntry, error) {
	if c.h.queryGIDTable != nil {
		return c.h.queryGIDTable(c.inner, maxEntries, flags)
	}
	return c.inner.(verbs.ExQuerier).QueryGIDTable(maxEntries, flags)
}

// GetSRQNum implements verbs.SRQNumGetter.
func (s *mSRQ) GetSRQNum() (uint32, error) {
	if s.h.getSRQNum != nil {
		return s.h.getSRQNum(s.inner)
	}
	return s.inner.(verbs.SRQNumGetter).GetSRQNum()
}

// queryMutants returns the mutants of the QUERY family.
func queryMutants() []mutant {
	return []mutant{
		{
			name: "ibv_query_qp honours the mask strictly: unasked attributes read zero", rules: []string{"QUERY-01"},
			h: hooks{queryQP: func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, init, err := q.Query(mask)
				if mask&verbs.QPAttrAccessFlags == 0 {
					a.QPAccessFlags = 0
				}
				if mask&verbs.QPAttrCap == 0 {
					a.Cap = verbs.QPCap{}
				}
				return a, init, err
			}},
		},
		{
			name: "ibv_query_qp's init_attr loses sq_sig_all", rules: []string{"QUERY-01"},
			h: hooks{queryQP: func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				a, init, err := q.Query(mask)
				init.SQSigAll = false
				return a, init, err
			}},
		},
		{
			name: "ibv_query_qp accepts IBV_QP_RATE_LIMIT", rules: []string{"QUERY-02"},
			h: hooks{queryQP: func(q verbs.QP, mask verbs.QPAttrMask) (verbs.QPAttr, verbs.QPInitAttr, error) {
				return q.Query(mask & verbs.QueryableQPAttrs)
			}},
		},
		{
			name: "ibv_query_device_ex ignores the input comp_mask", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c verbs.Context, _ uint32) (verbs.DeviceAttrEx, error) {
				return c.(verbs.ExQuerier).QueryDeviceEx(0)
			}},
		},
		{
			name: "ibv_query_device_ex reports phys_port_cnt_ex 0", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c verbs.Context, m uint32) (verbs.DeviceAttrEx, error) {
				a, err := c.(verbs.ExQuerier).QueryDeviceEx(m)
				a.PhysPortCntEx = 0
				return a, err
			}},
		},
		{
			name: "ibv_query_device_ex reports no timestamp clock though CQs timestamp", rules: []string{"QUERY-03"},
			h: hooks{queryDevEx: func(c verbs.Context, m uint32) (verbs.DeviceAttrEx, error) {
				a, err := c.(verbs.ExQuerier).QueryDeviceEx(m)
				a.CompletionTimestampMask, a.HCACoreClock = 0, 0
				return a, err
			}},
		},
		{
			name: "ibv_query_device_ex reports a timestamp clock on rxe, which has none", rules: []string{"QUERY-03"},
			base: sim.RXEProfile(),
			h: hooks{queryDevEx: func(c verbs.Context, m uint32) (verbs.DeviceAttrEx, error) {
				a, err := c.(verbs.ExQuerier).QueryDeviceEx(m)
				a.CompletionTimestampMask, a.HCACoreClock = 1<<48-1, 1e6
				return a, err
			}},
		},
		{
			name: "phys_state stays LINK_UP when the port goes down", rules: []string{"QUERY-04"},
			h: hooks{queryPort: func(c verbs.Context, port uint8) (verbs.PortAttr, error) {
				p, err := c.QueryPort(port)
				p.PhysState = 5
				return p, err
			}},
		},
		{
			name: "ibv_query_gid_ex reads an empty entry as the zero GID", rules: []string{"QUERY-05"},
			h: hooks{queryGIDEx: func(c verbs.Context, port, index, flags uint32) (verbs.GIDEntry, error) {
				g, err := c.(verbs.ExQuerier).QueryGIDEx(port, index, flags)
				if err != nil && index > 0 && port == 1 && flags == 0 && index < 128 {
					return verbs.GIDEntry{GIDIndex: index, PortNum: port}, nil
				}
				return g, err
			}},
		},
		{
			name: "ibv_query_gid_ex reports every GID as RoCE v2", rules: []string{"QUERY-05"},
			h: hooks{queryGIDEx: func(c verbs.Context, port, index, flags uint32) (verbs.GIDEntry, error) {
				g, err := c.(verbs.ExQuerier).QueryGIDEx(port, index, flags)
				g.GIDType = verbs.GIDTypeRoCEv2
				return g, err
			}},
		},
		{
			name: "ibv_query_gid_table truncates to max_entries instead of failing", rules: []string{"QUERY-06"},
			h: hooks{queryGIDTable: func(c verbs.Context, maxEntries int, flags uint32) ([]verbs.GIDEntry, error) {
				all, err := c.(verbs.ExQuerier).QueryGIDTable(1<<16, flags)
				if err != nil || maxEntries <= 0 {
					return nil, err
				}
				return all[:min(len(all), maxEntries)], nil
			}},
		},
		{
			name: "ibv_get_srq_num returns a number for a basic SRQ", rules: []string{"QUERY-07"},
			h: hooks{getSRQNum: func(verbs.SRQ) (uint32, error) { return 1, nil }},
		},
	}
}
