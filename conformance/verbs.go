package conformance

import "github.com/verbsim/verbsim/verbs"

// Device is what the suite runs against: an RDMA device of package verbs,
// and the readings of the implementation-defined rules it follows. Run calls
// the factory once per case, so each case starts on a fresh device. See the
// package doc for everything an implementation provides.
type Device interface {
	verbs.Device
	// Profile states which reading of each implementation-defined rule the
	// device follows, as rdma-unit-test reads per-NIC introspection flags:
	// verbs.Readings, the one declaration of the readings that the
	// simulator's profiles, this suite and its model (conformance/model)
	// share. The zero value is the man pages' reading.
	Profile() verbs.Readings
}

// Limits are the device attributes the suite needs, as ibv_query_device
// and ibv_query_port report them (LimitsOf).
type Limits struct {
	MaxCQ          int // ibv_device_attr.max_cq
	MaxCQE         int // ibv_device_attr.max_cqe
	NumCompVectors int // ibv_context.num_comp_vectors
	MaxPD          int // ibv_device_attr.max_pd

	MaxQPWR         int // ibv_device_attr.max_qp_wr: work requests per queue
	MaxSGE          int // ibv_device_attr.max_sge: SGEs per work request
	MaxInline       int // the largest max_inline_data a QP may ask for
	MaxQPRDAtom     int // ibv_device_attr.max_qp_rd_atom: bound of max_dest_rd_atomic
	MaxQPInitRDAtom int // ibv_device_attr.max_qp_init_rd_atom: bound of max_rd_atomic
	MaxSRQWR        int // ibv_device_attr.max_srq_wr
	MaxSRQSGE       int // ibv_device_attr.max_srq_sge
	NumPorts        int // ibv_device_attr.phys_port_cnt
	// SRQResize says device_cap_flags has IBV_DEVICE_SRQ_RESIZE: ibv_modify_srq
	// may change max_wr (SRQ-07). LimitedDevice.WithLimits leaves it as it is.
	SRQResize bool
	// Port describes port 1, which the suite's QPs use. WithLimits changes
	// only Port.MaxMTU (when non-zero).
	Port PortLimits
}

// PortLimits are the attributes of a port (struct ibv_port_attr) that the
// values of a QP's attributes are checked against (QP-22).
type PortLimits struct {
	MaxMTU       verbs.MTU // max_mtu: the largest path_mtu
	PKeyTableLen int       // pkey_tbl_len: pkey_index must be below it
	GIDTableLen  int       // gid_tbl_len: grh.sgid_index must be below it
	// Ethernet says link_layer is IBV_LINK_LAYER_ETHERNET (RoCE): address
	// vectors must be global, and there are no alternate paths.
	Ethernet bool
}

// Injector is an optional capability of a CQ: adding a completion directly,
// as the adapter would when a work request finishes. With it the suite checks
// every CQ and notification rule without traffic. solicited says the
// message of a successful receive completion carried the solicited-event bit.
type Injector interface {
	Push(w verbs.WC, solicited bool) (overrun bool, err error)
}

// Referencer is an optional capability of a CQ: holding it the way a QP does,
// so CQ-11 can be checked before QPs exist; and of an MR: holding it the way
// a bound memory window does, so MR-06 can be checked before memory windows
// exist.
type Referencer interface {
	Ref() error
	Unref()
}

// LimitedDevice is an optional capability of a Device: a fresh device of the
// same implementation and profile whose limits (as ibv_query_device and
// ibv_query_port report them) are l, sharing nothing with the receiver. Fields of l left zero keep the receiver's values. Rules about
// exhausting a limit (CQ-06) use it to run against small limits; without it
// they need a device whose own limits are small.
type LimitedDevice interface {
	WithLimits(l Limits) (Device, error)
}

// Consumer is an optional capability of an SRQ: taking its oldest receive
// request the way a QP receiving a message does, which is when the limit
// event fires (SRQ-04). With it the suite checks the SRQ rules about
// consumption before there is traffic. ok is false when the SRQ is empty.
type Consumer interface {
	Take() (wrID uint64, sges []verbs.SGE, ok bool)
}

// Depth is an optional capability of a completion channel: the number of
// queued, unread events, which is when its descriptor polls readable
// (CHAN-05); and of an SRQ: the number of receive requests waiting in it
// (FLUSH-07).
type Depth interface {
	Len() int
}

// Outstander is an optional capability of a QP: how many send and receive
// work requests are posted and not yet completed (or flushed). With it the
// state machine compares a QP's queues with the model's, not only what the
// posts and polls show.
type Outstander interface {
	Outstanding() (send, recv int)
}

// LimitsOf reads the limits of an open device context: ibv_query_device, and
// ibv_query_port of port 1 when the device has ports.
func LimitsOf(c verbs.Context) (Limits, error) {
	a, err := c.QueryDevice()
	if err != nil {
		return Limits{}, err
	}
	l := Limits{
		MaxCQ: a.MaxCQ, MaxCQE: a.MaxCQE, NumCompVectors: c.NumCompVectors(), MaxPD: a.MaxPD,
		MaxQPWR: a.MaxQPWR, MaxSGE: a.MaxSGE, MaxInline: a.MaxInline,
		MaxQPRDAtom: a.MaxQPRDAtom, MaxQPInitRDAtom: a.MaxQPInitRDAtom,
		MaxSRQWR: a.MaxSRQWR, MaxSRQSGE: a.MaxSRQSGE, NumPorts: int(a.PhysPortCnt),
		SRQResize: a.DeviceCapFlags&verbs.DeviceSRQResize != 0,
	}
	if a.PhysPortCnt == 0 {
		return l, nil
	}
	p, err := c.QueryPort(1)
	if err != nil {
		return Limits{}, err
	}
	l.Port = PortLimits{
		MaxMTU:       p.MaxMTU,
		PKeyTableLen: int(p.PKeyTblLen),
		GIDTableLen:  p.GIDTblLen,
		Ethernet:     p.LinkLayer == verbs.LinkLayerEthernet,
	}
	return l, nil
}

// queryAll asks ibv_query_qp for every attribute the suite reads.
const queryAll = verbs.KnownQPAttrs &^ verbs.QPAttrRateLimit

// queryQP is ibv_query_qp of every attribute: the current state in QPState
// and the real capacities in Cap.
func queryQP(q verbs.QP) (verbs.QPAttr, error) {
	a, _, err := q.Query(queryAll)
	return a, err
}
