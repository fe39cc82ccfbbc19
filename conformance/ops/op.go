package ops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// Op is one operation of a Machine: a verb, or a capability of the device
// under test, with every argument it takes. Objects are named as a scenario
// names them (ch0, cq3, qp1); the context, the PD and the AH a Machine makes
// first are ctx, pd and ah. String renders the operation as one line of the
// scenario language, which Parse reads back.
type Op interface {
	String() string
	// check reports why m cannot apply the operation now, or nil.
	check(m *Machine) error
	// apply applies it to the device and the model and compares them.
	apply(m *Machine) error
}

// CreateChannel is ibv_create_comp_channel.
type CreateChannel struct {
	Name string
}

// CreateCQ is ibv_create_cq with cqe entries on a channel ("" for none),
// with comp_vector Vector.
type CreateCQ struct {
	Name    string
	CQE     int
	Channel string
	Vector  int
}

// Arm is ibv_req_notify_cq.
type Arm struct {
	CQ        string
	Solicited bool // solicited_only
}

// Push adds a completion to a CQ as the adapter would (conformance.Injector).
// Of the completion only wr_id, status, opcode, byte_len, qp_num,
// vendor_err and, with IBV_WC_WITH_IMM, imm_data are written in the
// scenario language; other fields must be zero.
type Push struct {
	CQ        string
	WC        verbs.WC
	Solicited bool // the message carried the solicited-event bit
}

// Poll is ibv_poll_cq for up to N completions, or with Ex (and N > 0, on
// a CQ that offers it) the poll iterator (ibv_start_poll, ibv_next_poll,
// ibv_end_poll; CQX-10).
type Poll struct {
	CQ string
	N  int
	Ex bool
}

// GetEvent is ibv_get_cq_event on a channel, without blocking.
type GetEvent struct {
	Channel string
}

// Ack is ibv_ack_cq_events.
type Ack struct {
	CQ string
	N  int
}

// Resize is ibv_resize_cq.
type Resize struct {
	CQ  string
	CQE int
}

// DestroyCQ is ibv_destroy_cq. When the model says it waits for acks (CQ-13)
// the Machine calls it with a context already cancelled and expects EINTR.
type DestroyCQ struct {
	CQ string
}

// DestroyChannel is ibv_destroy_comp_channel.
type DestroyChannel struct {
	Channel string
}

// GetAsync is ibv_get_async_event, without blocking.
type GetAsync struct{}

// AckAsync is ibv_ack_async_event on the Event-th event read so far
// (counting from 0, acked ones included).
type AckAsync struct {
	Event int
}

// Hold takes a reference on a CQ as a QP does (conformance.Referencer):
// destroying the CQ is EBUSY while it is held (CQ-11).
type Hold struct {
	CQ string
}

// Release drops a reference Hold took.
type Release struct {
	CQ string
}

// CreateQP is ibv_create_qp on the machine's PD, with one SGE per request.
type CreateQP struct {
	Name                 string
	Type                 verbs.QPType
	SendCQ, RecvCQ       string
	MaxSendWR, MaxRecvWR int
	SigAll               bool // sq_sig_all
}

// ModifyQP is ibv_modify_qp to state To with Mask, or (Mask 0) with the
// minimal mask of the move: IBV_QP_STATE and the attributes verbs.Transition
// requires. The attributes have valid values for every bit, and dest_qp_num
// is DestQPN.
type ModifyQP struct {
	QP   string
	To   verbs.QPState
	Mask verbs.QPAttrMask
}

// PostSend is ibv_post_send of one SEND without SGEs per wr_id, those of
// Signaled with IBV_SEND_SIGNALED. With UD each request names the machine's
// AH, the remote QPN DestQPN and the Q_Key QKey.
type PostSend struct {
	QP       string
	WRIDs    []uint64
	Signaled []uint64
	UD       bool
}

// PostRecv is ibv_post_recv of one receive request without SGEs per wr_id.
type PostRecv struct {
	QP    string
	WRIDs []uint64
}

// DestroyQP is ibv_destroy_qp.
type DestroyQP struct {
	QP string
}

// DestQPN is the dest_qp_num of every QP a Machine connects and the remote
// QPN of its UD sends: a 24-bit number no QP of a device with fewer than
// 2^24-16 QPs has, so nothing sent to it ever arrives.
const DestQPN = 0xFFFFF0

// QKey is the remote Q_Key of a Machine's UD sends.
const QKey = 0x11110000

// line builds one command line of the scenario language.
type line struct{ b strings.Builder }

func cmd(verb string, words ...string) *line {
	l := &line{}
	l.b.WriteString(verb)
	for _, w := range words {
		l.b.WriteString(" " + w)
	}
	return l
}

func (l *line) kv(k, v string) *line {
	if v != "" {
		fmt.Fprintf(&l.b, " %s=%s", k, v)
	}
	return l
}

func (l *line) num(k string, n int) *line { return l.kv(k, strconv.Itoa(n)) }

func (l *line) hex(k string, n uint64) *line { return l.kv(k, fmt.Sprintf("%#x", n)) }

func (l *line) flag(f string, on bool) *line {
	if on {
		l.b.WriteString(" " + f)
	}
	return l
}

func (l *line) ids(k string, ids []uint64) *line {
	if len(ids) == 0 {
		return l
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	if len(s) == 1 {
		return l.kv(k, s[0])
	}
	return l.kv(k, "("+strings.Join(s, ",")+")")
}

func (l *line) String() string { return l.b.String() }

// wcOpcodes are the completion opcodes of the scenario language.
var wcOpcodes = map[verbs.WCOpcode]string{verbs.WCSend: "send", verbs.WCRecv: "recv", verbs.WCRDMAWrite: "write",
	verbs.WCRDMARead: "read", verbs.WCRecvRDMAWithImm: "recv_imm"}

// statusWord is a status as the scenario language spells it: "success", or
// the lower-case name without IBV_WC_ ("loc_len_err").
func statusWord(s verbs.WCStatus) string {
	if s == verbs.WCSuccess {
		return "success"
	}
	return strings.ToLower(strings.TrimPrefix(s.Name(), "IBV_WC_"))
}

// qpTypeWord is a QP type as the scenario language spells it, or its number
// for a type that does not exist.
func qpTypeWord(t verbs.QPType) string {
	switch t {
	case verbs.QPTypeRC:
		return "rc"
	case verbs.QPTypeUC:
		return "uc"
	case verbs.QPTypeUD:
		return "ud"
	}
	return strconv.Itoa(int(t))
}

// stateWords are the QP states as the scenario language spells them, in
// enum order.
var stateWords = []string{"reset", "init", "rtr", "rts", "sqd", "sqe", "err", "unknown"}

func stateWord(s verbs.QPState) string {
	if int(s) < len(stateWords) {
		return stateWords[s]
	}
	return strconv.Itoa(int(s))
}

// maskWords are the attribute mask bits as the scenario language spells
// them.
var maskWords = map[verbs.QPAttrMask]string{verbs.QPAttrState: "state", verbs.QPAttrCurState: "cur_state",
	verbs.QPAttrEnSQDAsyncNotify: "en_sqd_async_notify", verbs.QPAttrAccessFlags: "access_flags",
	verbs.QPAttrPKeyIndex: "pkey_index", verbs.QPAttrPort: "port", verbs.QPAttrQKey: "qkey", verbs.QPAttrAV: "av",
	verbs.QPAttrPathMTU: "path_mtu", verbs.QPAttrTimeout: "timeout", verbs.QPAttrRetryCnt: "retry_cnt",
	verbs.QPAttrRNRRetry: "rnr_retry", verbs.QPAttrRQPSN: "rq_psn", verbs.QPAttrMaxQPRDAtomic: "max_qp_rd_atomic",
	verbs.QPAttrAltPath: "alt_path", verbs.QPAttrMinRNRTimer: "min_rnr_timer", verbs.QPAttrSQPSN: "sq_psn",
	verbs.QPAttrMaxDestRDAtomic: "max_dest_rd_atomic", verbs.QPAttrPathMigState: "path_mig_state",
	verbs.QPAttrCap: "cap", verbs.QPAttrDestQPN: "dest_qpn"}

func maskList(m verbs.QPAttrMask) string {
	var s []string
	for _, b := range m.Bits() {
		s = append(s, maskWords[b])
	}
	return "(" + strings.Join(s, ",") + ")"
}

func (o CreateChannel) String() string {
	return cmd("create_comp_channel", o.Name).kv("ctx", "ctx").String()
}

func (o CreateCQ) String() string {
	l := cmd("create_cq", o.Name).kv("ctx", "ctx").num("cqe", o.CQE).kv("channel", o.Channel)
	if o.Vector != 0 {
		l.num("vector", o.Vector)
	}
	return l.String()
}

func (o Arm) String() string {
	return cmd("req_notify_cq").kv("cq", o.CQ).flag("solicited", o.Solicited).flag("next", !o.Solicited).String()
}

func (o Push) String() string {
	w := o.WC
	l := cmd("complete").kv("cq", o.CQ).kv("wr_id", strconv.FormatUint(w.WRID, 10)).kv("opcode", wcOpcodes[w.Opcode])
	if _, ok := wcOpcodes[w.Opcode]; !ok {
		l.num("opcode", int(w.Opcode))
	}
	l.kv("status", statusWord(w.Status)).num("byte_len", int(w.ByteLen))
	if w.QPNum != 0 {
		l.hex("qp_num", uint64(w.QPNum))
	}
	if w.VendorErr != 0 {
		l.hex("vendor_err", uint64(w.VendorErr))
	}
	if w.WCFlags&verbs.WCWithImm != 0 {
		l.num("imm", int(w.ImmData))
	}
	return l.flag("solicited", o.Solicited).String()
}

func (o Poll) String() string {
	return cmd("poll_cq").kv("cq", o.CQ).num("n", o.N).flag("ex", o.Ex).String()
}

func (o GetEvent) String() string { return cmd("get_cq_event").kv("channel", o.Channel).String() }

func (o Ack) String() string { return cmd("ack_cq_events").kv("cq", o.CQ).num("n", o.N).String() }

func (o Resize) String() string { return cmd("resize_cq").kv("cq", o.CQ).num("cqe", o.CQE).String() }

func (o DestroyCQ) String() string { return cmd("destroy_cq").kv("cq", o.CQ).String() }

func (o DestroyChannel) String() string {
	return cmd("destroy_comp_channel").kv("channel", o.Channel).String()
}

func (GetAsync) String() string { return cmd("get_async_event").kv("ctx", "ctx").String() }

func (o AckAsync) String() string {
	return cmd("ack_async_event").kv("ctx", "ctx").num("event", o.Event).String()
}

func (o Hold) String() string { return cmd("hold").kv("cq", o.CQ).String() }

func (o Release) String() string { return cmd("release").kv("cq", o.CQ).String() }

func (o CreateQP) String() string {
	return cmd("create_qp", o.Name).kv("pd", "pd").kv("type", qpTypeWord(o.Type)).kv("send_cq", o.SendCQ).
		kv("recv_cq", o.RecvCQ).num("send_wr", o.MaxSendWR).num("recv_wr", o.MaxRecvWR).flag("sq_sig_all", o.SigAll).String()
}

func (o ModifyQP) String() string {
	l := cmd("modify_qp").kv("qp", o.QP).kv("state", stateWord(o.To))
	if o.Mask != 0 {
		l.kv("mask", maskList(o.Mask))
	}
	return l.hex("dest_qpn", DestQPN).String()
}

func (o PostSend) String() string {
	l := cmd("post_send").kv("qp", o.QP).ids("wr_id", o.WRIDs).num("len", 0)
	l.ids("signaled", o.Signaled)
	if o.UD {
		l.kv("ah", "ah").hex("dest_qpn", DestQPN).hex("qkey", QKey)
	}
	return l.String()
}

func (o PostRecv) String() string {
	return cmd("post_recv").kv("qp", o.QP).ids("wr_id", o.WRIDs).num("len", 0).String()
}

func (o DestroyQP) String() string { return cmd("destroy_qp").kv("qp", o.QP).String() }
