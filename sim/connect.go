package sim

import (
	"errors"
	"syscall"

	"github.com/verbsim/verbsim/sim/verr"
	"github.com/verbsim/verbsim/verbs"
)

// ConnectOptions are the attributes Connect gives both QPs. Zero fields
// take the defaults in parentheses.
type ConnectOptions struct {
	Port        uint8             // local port of both QPs (1)
	PathMTU     verbs.MTU         // path_mtu (the smaller active MTU of the two ports)
	Access      verbs.AccessFlags // qp_access_flags (REMOTE_WRITE|REMOTE_READ|REMOTE_ATOMIC)
	Timeout     uint8             // local ACK timeout code (14: about 67 ms)
	RetryCnt    uint8             // retry_cnt (7)
	RNRRetry    uint8             // rnr_retry (7: without limit)
	MinRNRTimer uint8             // min_rnr_timer (12: 0.64 ms)
	RDAtomic    uint8             // max_rd_atomic and max_dest_rd_atomic (16)
	// NoDefaults keeps zero values as zero (for Timeout, RetryCnt,
	// RNRRetry, MinRNRTimer, RDAtomic and Access), to test those rules.
	NoDefaults bool
	SQPSN      uint32 // the first PSN of a's send queue; b's is SQPSN+1000
}

// Connect takes two RC or UC QPs, or an XRC_SEND QP and an XRC_RECV QP
// (in either order), from RESET to RTS, each connected to the other: the exchange of QP numbers, PSNs and addresses that rdma_cm or an
// out-of-band socket does in a real program, followed by the three
// ibv_modify_qp calls per QP. a and b may be on different devices of the
// fabric, including two QPs of one device (loopback), but not on two
// fabrics, which no wire joins: that is EINVAL, and neither QP changes.
func Connect(a, b *QP, o ConnectOptions) error {
	const verb = "connect"
	if a == nil || b == nil || a == b || !connectable(a.Type(), b.Type()) {
		return verr.New(verb, syscall.EINVAL, "two distinct QPs of the same connected type (RC or UC), or an XRC_SEND and an XRC_RECV QP, are needed")
	}
	if err := checkOwner(verb, "QP b", a, b, sameFabric); err != nil {
		return err
	}
	if a.Destroyed() || b.Destroyed() {
		// Checked before either QP is modified, so a refusal changes nothing.
		return verr.New(verb, syscall.EINVAL, "a QP has been destroyed")
	}
	if o.Port == 0 {
		o.Port = 1
	}
	if !o.NoDefaults {
		def := func(p *uint8, v uint8) {
			if *p == 0 {
				*p = v
			}
		}
		def(&o.Timeout, 14)
		def(&o.RetryCnt, 7)
		def(&o.RNRRetry, 7)
		def(&o.MinRNRTimer, 12)
		def(&o.RDAtomic, 16)
		if o.Access == 0 {
			o.Access = verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
		}
	}
	if a.Type() == verbs.QPTypeUC {
		o.Access &= verbs.AccessRemoteWrite | verbs.AccessLocalWrite
	}
	pa, err := qpPort(a, o.Port)
	if err != nil {
		return err
	}
	pb, err := qpPort(b, o.Port)
	if err != nil {
		return err
	}
	if o.PathMTU == 0 {
		o.PathMTU = min(pa.attr.ActiveMTU, pb.attr.ActiveMTU)
	}
	return errors.Join(
		toRTS(a, b.Num(), pb, o, o.SQPSN, o.SQPSN+1000),
		toRTS(b, a.Num(), pa, o, o.SQPSN+1000, o.SQPSN),
	)
}

// connectable reports whether QPs of types a and b can be connected to
// each other.
func connectable(a, b verbs.QPType) bool {
	switch a {
	case verbs.QPTypeRC, verbs.QPTypeUC:
		return a == b
	case verbs.QPTypeXRCSend:
		return b == verbs.QPTypeXRCRecv
	case verbs.QPTypeXRCRecv:
		return b == verbs.QPTypeXRCSend
	}
	return false
}

// qpPort finds port n of q's device.
func qpPort(q *QP, n uint8) (*port, error) {
	c := q.Context()
	if c == nil || n == 0 || int(n) > len(c.dev.ports) {
		return nil, verr.Errorf("connect", syscall.EINVAL, "QP %#x has no port %d", q.Num(), n)
	}
	return c.dev.ports[n-1], nil
}

func toRTS(q *QP, remote uint32, rp *port, o ConnectOptions, sqpsn, rqpsn uint32) error {
	av := verbs.AHAttr{DLID: rp.attr.LID, PortNum: o.Port}
	if rp.attr.LinkLayer == verbs.LinkLayerEthernet || rp.attr.LID == 0 {
		av.IsGlobal = true
		av.GRH = verbs.GlobalRoute{DGID: rp.gids[0], HopLimit: 64}
	}
	rtr := verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN | verbs.QPAttrRQPSN
	rts := verbs.QPAttrState | verbs.QPAttrSQPSN
	switch q.Type() {
	case verbs.QPTypeRC:
		rtr |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		rts |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	case verbs.QPTypeXRCSend:
		rts |= verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry | verbs.QPAttrMaxQPRDAtomic
	case verbs.QPTypeXRCRecv:
		rtr |= verbs.QPAttrMaxDestRDAtomic | verbs.QPAttrMinRNRTimer
		rts |= verbs.QPAttrTimeout
	}
	return errors.Join(
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: o.Port, QPAccessFlags: o.Access},
			verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR, PathMTU: o.PathMTU, DestQPNum: remote, RQPSN: rqpsn,
			MaxDestRDAtomic: o.RDAtomic, MinRNRTimer: o.MinRNRTimer, AHAttr: av}, rtr),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS, SQPSN: sqpsn, Timeout: o.Timeout, RetryCnt: o.RetryCnt,
			RNRRetry: o.RNRRetry, MaxRDAtomic: o.RDAtomic}, rts),
	)
}

// ReadyUD takes a UD QP from RESET to RTS on port 1 with Q_Key qkey.
func ReadyUD(q *QP, qkey uint32) error {
	if q == nil || q.Type() != verbs.QPTypeUD {
		return verr.New("ready_ud", syscall.EINVAL, "a UD QP is needed")
	}
	return errors.Join(
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: 1, QKey: qkey}, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrQKey),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTR}, verbs.QPAttrState),
		q.Modify(&verbs.QPAttr{QPState: verbs.QPStateRTS}, verbs.QPAttrState|verbs.QPAttrSQPSN),
	)
}
