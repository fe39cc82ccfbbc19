package scenario

// engine_qp.go holds the commands that make and move QPs: create_qp,
// modify_qp and connect.

import (
	"fmt"
	"slices"

	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

func (in *interp) doCreateQP(_ *Step, a *args) error {
	name := a.name()
	p := a.ref("pd", "pd")
	both, sc, rc, s := a.ref("cq", "cq"), a.ref("send_cq", "cq"), a.ref("recv_cq", "cq"), a.ref("srq", "srq")
	if a.err != nil {
		return a.err
	}
	if sc == "" {
		sc = both
	}
	if rc == "" {
		rc = both
	}
	attr := sim.QPInitAttr{Context: name, SendCQ: in.obj.cq[sc], RecvCQ: in.obj.cq[rc], SQSigAll: a.has("sq_sig_all"),
		Cap: verbs.QPCap{MaxSendWR: uint32(min(a.num("send_wr", 4), 1<<20)), MaxRecvWR: uint32(min(a.num("recv_wr", 4), 1<<20)), MaxSendSGE: uint32(min(a.num("send_sge", 1), 1<<10)), MaxRecvSGE: uint32(min(a.num("recv_sge", 1), 1<<10)),
			MaxInlineData: uint32(min(a.num("inline", 0), 1<<20))}}
	if s != "" {
		attr.SRQ = in.obj.srq[s]
		attr.Cap.MaxRecvWR = 0
	}
	switch a.str("type", "rc") {
	case "rc":
		attr.Type = verbs.QPTypeRC
	case "uc":
		attr.Type = verbs.QPTypeUC
	case "ud":
		attr.Type = verbs.QPTypeUD
	default:
		attr.Type = verbs.QPType(a.num("type", 0)) // a type that does not exist
	}
	q, err := in.obj.pd[p].CreateQP(attr)
	in.verbResult(fmt.Sprintf("ibv_create_qp(%v)", attr.Type), err)
	if err != nil {
		return nil
	}
	dev := in.obj.pd[p].Context().Device().Name()
	in.obj.qp[name] = &qpObj{q: q, pd: p, dev: dev, unsignaled: map[uint64]bool{}, sigAll: attr.SQSigAll}
	in.alias[fmt.Sprintf("%s/qp %#x", dev, q.Num())] = "qp " + name
	in.say("qp %s is qp_num %#x on device %s, in RESET", name, q.Num(), dev)
	in.note("QP-01")
	return nil
}

var maskOf = map[string]verbs.QPAttrMask{"state": verbs.QPAttrState, "cur_state": verbs.QPAttrCurState, "en_sqd_async_notify": verbs.QPAttrEnSQDAsyncNotify,
	"access_flags": verbs.QPAttrAccessFlags, "pkey_index": verbs.QPAttrPKeyIndex, "port": verbs.QPAttrPort, "qkey": verbs.QPAttrQKey, "av": verbs.QPAttrAV,
	"path_mtu": verbs.QPAttrPathMTU, "timeout": verbs.QPAttrTimeout, "retry_cnt": verbs.QPAttrRetryCnt, "rnr_retry": verbs.QPAttrRNRRetry,
	"rq_psn": verbs.QPAttrRQPSN, "max_qp_rd_atomic": verbs.QPAttrMaxQPRDAtomic, "alt_path": verbs.QPAttrAltPath, "min_rnr_timer": verbs.QPAttrMinRNRTimer,
	"sq_psn": verbs.QPAttrSQPSN, "max_dest_rd_atomic": verbs.QPAttrMaxDestRDAtomic, "path_mig_state": verbs.QPAttrPathMigState, "cap": verbs.QPAttrCap,
	"dest_qpn": verbs.QPAttrDestQPN}

func stateOf(s string) verbs.QPState {
	return verbs.QPState(slices.Index(states, s))
}

func (in *interp) doModify(st *Step, a *args) error {
	n, peer := a.ref("qp", "qp"), a.ref("peer", "qp")
	if a.err != nil {
		return a.err
	}
	o := in.obj.qp[n]
	cur := o.q.State()
	to := cur
	if s := a.str("state", ""); s != "" {
		to = stateOf(s)
	}
	var mask verbs.QPAttrMask
	if bits := a.list("mask"); len(bits) > 0 {
		for _, b := range bits {
			mask |= maskOf[b]
		}
	} else if m, ok := verbs.MinimalMask(cur, to, o.q.Type()); ok {
		mask = m
	} else {
		mask = verbs.QPAttrState
	}
	dest := uint32(a.num("dest_qpn", uint64(o.q.Num())))
	if peer != "" {
		dest = in.obj.qp[peer].q.Num()
	}
	var dlid uint16 = 1
	if peer != "" {
		dlid = in.lidOf(in.obj.qp[peer].dev)
	}
	attr := verbs.QPAttr{QPState: to, PortNum: 1, QKey: uint32(a.num("qkey", 0x11111111)), QPAccessFlags: verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		PathMTU: mtuOf(a.str("path_mtu", "1024")), DestQPNum: dest, MaxDestRDAtomic: uint8(a.num("max_dest_rd_atomic", 1)), MinRNRTimer: uint8(a.num("min_rnr_timer", 12)),
		AHAttr: verbs.AHAttr{DLID: dlid, PortNum: 1}, Timeout: uint8(a.num("timeout", 14)), RetryCnt: uint8(a.num("retry_cnt", 7)),
		RNRRetry: uint8(a.num("rnr_retry", 7)), MaxRDAtomic: uint8(a.num("max_rd_atomic", 1)),
		RQPSN: uint32(a.num("rq_psn", 0)), SQPSN: uint32(a.num("sq_psn", 0))}
	if keyGiven(a, "access") {
		attr.QPAccessFlags = accessOf(a.list("access"))
	}
	if d := a.str("av", ""); d != "" {
		av, err := in.avOf(d)
		if err != nil {
			in.verbResult("ibv_modify_qp", err)
			return nil
		}
		attr.AHAttr = av
	}
	err := o.q.Modify(&attr, mask)
	in.verbResult(fmt.Sprintf("ibv_modify_qp(%s, %v→%v, mask %v)", n, cur, to, mask), err)
	if err == nil {
		in.note("QP-07")
		if to == verbs.QPStateErr && cur != verbs.QPStateErr {
			in.note("FLUSH-01", "FLUSH-13")
		}
	}
	return nil
}

// lidOf returns the LID of port 1 of a device (1 when it cannot be read).
func (in *interp) lidOf(dev string) uint16 {
	var lid uint16 = 1
	if d, err := in.f.Device(dev); err == nil {
		if c, err := d.Open(); err == nil {
			if pa, err := c.QueryPort(1); err == nil {
				lid = pa.LID
			}
			c.Close()
		}
	}
	return lid
}

// doConnect runs connect: two QPs to RTS, each the other's peer.
func (in *interp) doConnect(_ *Step, a *args) error {
	x, y := a.ref("a", "qp"), a.ref("b", "qp")
	if a.err != nil {
		return a.err
	}
	o := sim.ConnectOptions{Timeout: uint8(a.num("timeout", 0)), RetryCnt: uint8(a.num("retry_cnt", 0)),
		RNRRetry: uint8(a.num("rnr_retry", 0)), MinRNRTimer: uint8(a.num("min_rnr_timer", 0))}
	if _, ok := a.get("retry_cnt"); ok {
		o.NoDefaults = true
		o = fillConnectDefaults(o, a)
	} else if _, ok := a.get("rnr_retry"); ok {
		o.NoDefaults = true
		o = fillConnectDefaults(o, a)
	}
	in.verbResult(fmt.Sprintf("connect %s and %s: RESET→INIT→RTR→RTS on both", x, y), sim.Connect(in.obj.qp[x].q, in.obj.qp[y].q, o))
	return nil
}

func fillConnectDefaults(o sim.ConnectOptions, a *args) sim.ConnectOptions {
	o.Timeout = uint8(a.num("timeout", 14))
	o.RetryCnt = uint8(a.num("retry_cnt", 7))
	o.RNRRetry = uint8(a.num("rnr_retry", 7))
	o.MinRNRTimer = uint8(a.num("min_rnr_timer", 12))
	o.RDAtomic = 16
	o.Access = verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	return o
}
