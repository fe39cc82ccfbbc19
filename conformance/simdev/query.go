package simdev

import (
	"reflect"

	"github.com/verbsim/verbsim/conformance"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/sim/qp"
)

// QueryMask implements conformance.QPMaskQuerier.
func (a qpAdapter) QueryMask(mask qp.AttrMask) (qp.Attr, conformance.QPQueryInit, error) {
	attr, init, err := a.q.QueryMask(mask)
	if err != nil {
		return attr, conformance.QPQueryInit{}, err
	}
	return attr, conformance.QPQueryInit{
		Cap: init.Cap, Type: init.Type, SQSigAll: init.SQSigAll, HasSRQ: init.SRQ != nil, Context: init.Context,
	}, nil
}

// QueryDeviceEx implements conformance.DeviceQuerier.
func (c contextAdapter) QueryDeviceEx(compMask uint32) (conformance.DeviceAttrEx, error) {
	a, err := c.c.QueryDeviceEx(compMask)
	if err != nil {
		return conformance.DeviceAttrEx{}, err
	}
	base, err := c.c.QueryDevice()
	if err != nil {
		return conformance.DeviceAttrEx{}, err
	}
	// Everything after device_cap_flags_ex except phys_port_cnt_ex and the
	// timestamp clock is a capability verbsim lacks.
	rest := a
	rest.Orig, rest.CompMask, rest.DeviceCapFlagsEx, rest.PhysPortCntEx = sim.DeviceAttr{}, 0, 0, 0
	rest.CompletionTimestampMask, rest.HCACoreClock = 0, 0
	var unsupported uint64
	if !reflect.ValueOf(rest).IsZero() {
		unsupported = 1
	}
	return conformance.DeviceAttrEx{
		PhysPortCnt:             a.Orig.PhysPortCnt,
		DeviceCapFlags:          uint32(a.Orig.DeviceCapFlags),
		CompMask:                a.CompMask,
		DeviceCapFlagsEx:        a.DeviceCapFlagsEx,
		PhysPortCntEx:           a.PhysPortCntEx,
		CompletionTimestampMask: a.CompletionTimestampMask,
		HCACoreClock:            a.HCACoreClock,
		SameAsQueryDevice:       a.Orig == base,
		Unsupported:             unsupported,
	}, nil
}

// QueryPortEx implements conformance.DeviceQuerier.
func (c contextAdapter) QueryPortEx(port uint8) (conformance.PortAttrEx, error) {
	p, err := c.c.QueryPort(port)
	return conformance.PortAttrEx{State: uint8(p.State), PhysState: p.PhysState}, err
}

func gidEntry(g sim.GIDEntry) conformance.GIDEntry {
	return conformance.GIDEntry{GID: g.GID, GIDIndex: g.GIDIndex, PortNum: g.PortNum, GIDType: uint32(g.GIDType), NdevIfindex: g.NdevIfindex}
}

// QueryGIDEx implements conformance.DeviceQuerier.
func (c contextAdapter) QueryGIDEx(port, index, flags uint32) (conformance.GIDEntry, error) {
	g, err := c.c.QueryGIDEx(port, index, flags)
	return gidEntry(g), err
}

// QueryGIDTable implements conformance.DeviceQuerier.
func (c contextAdapter) QueryGIDTable(maxEntries int, flags uint32) ([]conformance.GIDEntry, error) {
	gs, err := c.c.QueryGIDTable(maxEntries, flags)
	if err != nil {
		return nil, err
	}
	out := make([]conformance.GIDEntry, len(gs))
	for i, g := range gs {
		out[i] = gidEntry(g)
	}
	return out, nil
}

var (
	_ conformance.QPMaskQuerier = qpAdapter{}
	_ conformance.DeviceQuerier = contextAdapter{}
	_ conformance.SRQNumGetter  = (*sim.SRQ)(nil)
)
