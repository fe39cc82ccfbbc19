package ops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// The typed operations of TrafficStateMachine: every call the machine
// makes on the fabric under test is one of these, logged with its
// arguments as the machine drew them, and printed as one line of the
// scenario language (internal/scenario), so that a failing run's log is a
// scenario `verbsim run` replays step for step. ParseTraffic reads a log
// back. Objects are named by the machine's numbering: ctx0 and ctx1 (the
// devices a and b), cq0..cq3, and per QP i of the model pdI, mrI and qpI;
// ahI_D is QP i's AH to device D; mwK is window K of the model.

// TrafficOp is one operation of a traffic run.
type TrafficOp interface {
	String() string
	trafficOp()
}

// Piece is OFF+LEN: bytes of an MR's buffer, from its start.
type Piece struct{ Off, Len uint64 }

// TFabric is the fabric: devices a and b with ports of MTU bytes, RoCE
// (Ethernet, every path with a GRH) or InfiniBand, the seed, the readings
// and the packet faults.
type TFabric struct {
	Seed     uint64
	MTU      int
	RoCE     bool
	Readings verbs.Readings
	Drop     float64
	Dup      float64
	Delay    float64
	MaxDelay uint64
	Random   bool // ready events run in a seeded random order
}

// TOpen is ibv_open_device on device Dev (0: a, 1: b), as context ctxDev.
type TOpen struct{ Dev int }

// TCreateCQ is ibv_create_cq of CQE entries on context ctxDev.
type TCreateCQ struct {
	Name string
	Dev  int
	CQE  int
}

// TAllocPD is ibv_alloc_pd on context ctxDev.
type TAllocPD struct {
	Name string
	Dev  int
}

// TRegMR is ibv_reg_mr of a fresh buffer of Size bytes.
type TRegMR struct {
	Name, PD string
	Size     int
	Access   verbs.AccessFlags
}

// TFill writes into an MR's buffer, piece after piece: the bytes of
// pattern.Fill(Seed) (Kind "pattern"), pattern.Payload(Seed) ("payload"),
// or the byte Seed in each ("byte").
type TFill struct {
	MR   string
	At   []Piece
	Kind string
	Seed uint64
}

// TCreateQP is ibv_create_qp.
type TCreateQP struct {
	Name, PD         string
	Type             verbs.QPType
	SendCQ, RecvCQ   string
	SendWR, RecvWR   int
	SendSGE, RecvSGE int
	Inline           int
	SigAll           bool
}

// TModifyQP is ibv_modify_qp with exactly the attributes of Mask: Peer
// names the remote QP (dest_qp_num), AV the device whose port 1 the path
// leads to.
type TModifyQP struct {
	QP                         string
	To                         verbs.QPState
	Mask                       verbs.QPAttrMask
	Access                     verbs.AccessFlags
	Peer, AV                   string
	PathMTU                    int
	RQPSN, SQPSN, QKey         uint32
	Timeout, RetryCnt          uint8
	RNRRetry, MinRNRTimer      uint8
	MaxRDAtomic, MaxDestRDAtom uint8
}

// TCreateAH is ibv_create_ah on PD, to port 1 of device Dev.
type TCreateAH struct {
	Name, PD string
	Dev      int
}

// TRecv is one receive request: its scatter list, pieces of the QP's MR.
type TRecv struct {
	WRID uint64
	SGL  []Piece
}

// TPostRecv is ibv_post_recv of a chain of requests whose lists are pieces
// of MR.
type TPostRecv struct {
	QP, MR string
	WRs    []TRecv
}

// TSend is one send request. RAddrMR names the MR RAddr counts from ("":
// RAddr is the address itself, as for a zero-based window).
type TSend struct {
	WRID          uint64
	Op            verbs.WROpcode
	SGL           []Piece
	Signaled      bool
	Inline        bool // sent inline, its gather list with lkey 0
	Imm           uint32
	RAddrMR       string
	RAddr         uint64
	RKey          uint32
	Compare, Swap uint64
	AH, Dest      string // UD: the AH and the destination QP ("": DestQPN)
	DestQPN, QKey uint32
}

// TPostSend is ibv_post_send of a chain of requests whose lists are pieces
// of MR; a BIND_MW request (posted alone) binds window MW with the key in
// its RKey to BindAt of BindMR with BindAccess.
type TPostSend struct {
	QP, MR     string
	WRs        []TSend
	MW, BindMR string
	BindAt     Piece
	BindAccess verbs.AccessFlags
}

// TPoll is ibv_poll_cq for up to N completions.
type TPoll struct {
	CQ string
	N  int
}

// TTick lets NS nanoseconds pass.
type TTick struct{ NS uint64 }

// TRun runs the fabric until idle, for at most NS nanoseconds.
type TRun struct{ NS uint64 }

// TGetAsync is ibv_get_async_event on context ctxDev, without blocking.
type TGetAsync struct{ Dev int }

// TAckAsync is ibv_ack_async_event of the oldest event of context ctxDev
// read and not acknowledged.
type TAckAsync struct{ Dev int }

// TAllocMW is ibv_alloc_mw of type Type in PD.
type TAllocMW struct {
	Name, PD string
	Type     verbs.MWType
}

// TBindMW is ibv_bind_mw of a type 1 window.
type TBindMW struct {
	QP, MW, MR string
	WRID       uint64
	At         Piece
	Access     verbs.AccessFlags
	Signaled   bool
}

// TDeallocMW is ibv_dealloc_mw.
type TDeallocMW struct{ MW string }

func (TFabric) trafficOp()    {}
func (TOpen) trafficOp()      {}
func (TCreateCQ) trafficOp()  {}
func (TAllocPD) trafficOp()   {}
func (TRegMR) trafficOp()     {}
func (TFill) trafficOp()      {}
func (TCreateQP) trafficOp()  {}
func (TModifyQP) trafficOp()  {}
func (TCreateAH) trafficOp()  {}
func (TPostRecv) trafficOp()  {}
func (TPostSend) trafficOp()  {}
func (TPoll) trafficOp()      {}
func (TTick) trafficOp()      {}
func (TRun) trafficOp()       {}
func (TGetAsync) trafficOp()  {}
func (TAckAsync) trafficOp()  {}
func (TAllocMW) trafficOp()   {}
func (TBindMW) trafficOp()    {}
func (TDeallocMW) trafficOp() {}

// devName is device d's name on the fabric: a, b, ...
func devName(d int) string { return string(rune('a' + d)) }

func ctxName(d int) string { return "ctx" + strconv.Itoa(d) }

// pieces prints a scatter list: OFF+LEN pieces joined by "/", "-" for none.
func pieces(ps []Piece) string {
	if len(ps) == 0 {
		return "-"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%d+%d", p.Off, p.Len)
	}
	return strings.Join(s, "/")
}

// accessWords are the access flags as the scenario language spells them.
var accessWords = []struct {
	f    verbs.AccessFlags
	word string
}{{verbs.AccessLocalWrite, "local_write"}, {verbs.AccessRemoteWrite, "remote_write"}, {verbs.AccessRemoteRead, "remote_read"},
	{verbs.AccessRemoteAtomic, "remote_atomic"}, {verbs.AccessMWBind, "mw_bind"}, {verbs.AccessZeroBased, "zero_based"}}

// accessList prints access flags as a list; "" for none (the key is left out).
func accessList(a verbs.AccessFlags) string {
	var s []string
	for _, x := range accessWords {
		if a&x.f != 0 {
			s = append(s, x.word)
		}
	}
	if len(s) == 0 {
		return ""
	}
	return "(" + strings.Join(s, ",") + ")"
}

// sendOpWords are the send opcodes as the scenario language spells them.
var sendOpWords = map[verbs.WROpcode]string{verbs.WRSend: "send", verbs.WRSendWithImm: "send_imm", verbs.WRRDMAWrite: "write",
	verbs.WRRDMAWriteWithImm: "write_imm", verbs.WRRDMARead: "read", verbs.WRAtomicCmpAndSwp: "cas", verbs.WRAtomicFetchAndAdd: "faa",
	verbs.WRSendWithInv: "send_inv", verbs.WRLocalInv: "local_inv", verbs.WRBindMW: "bind_mw", verbs.WRAtomicWrite: "atomic_write"}

func prob(p float64) string {
	if p == 0 {
		return ""
	}
	return strconv.FormatFloat(p, 'g', -1, 64)
}

func (o TFabric) String() string {
	l := cmd("fabric").kv("devices", "(a,b)").hex("seed", o.Seed).num("mtu", o.MTU).kv("link", map[bool]string{false: "ib", true: "roce"}[o.RoCE])
	if o.Readings != (verbs.Readings{}) {
		l.kv("readings", "("+strings.ReplaceAll(o.Readings.String(), " ", ",")+")")
	}
	if o.Random {
		l.kv("schedule", "random")
	}
	l.kv("drop", prob(o.Drop)).kv("duplicate", prob(o.Dup)).kv("delay", prob(o.Delay))
	if o.MaxDelay != 0 {
		l.kv("max_delay_ns", strconv.FormatUint(o.MaxDelay, 10))
	}
	return l.String()
}

func (o TOpen) String() string {
	return cmd("open_device", ctxName(o.Dev)).kv("dev", devName(o.Dev)).String()
}

func (o TCreateCQ) String() string {
	return cmd("create_cq", o.Name).kv("ctx", ctxName(o.Dev)).num("cqe", o.CQE).String()
}

func (o TAllocPD) String() string { return cmd("alloc_pd", o.Name).kv("ctx", ctxName(o.Dev)).String() }

func (o TRegMR) String() string {
	return cmd("reg_mr", o.Name).kv("pd", o.PD).num("size", o.Size).kv("access", accessList(o.Access)).String()
}

func (o TFill) String() string {
	return cmd("fill").kv("mr", o.MR).kv("at", pieces(o.At)).kv(o.Kind, fmt.Sprintf("%#x", o.Seed)).String()
}

func (o TCreateQP) String() string {
	return cmd("create_qp", o.Name).kv("pd", o.PD).kv("type", qpTypeWord(o.Type)).kv("send_cq", o.SendCQ).kv("recv_cq", o.RecvCQ).
		num("send_wr", o.SendWR).num("recv_wr", o.RecvWR).num("send_sge", o.SendSGE).num("recv_sge", o.RecvSGE).
		num("inline", o.Inline).flag("sq_sig_all", o.SigAll).String()
}

func (o TModifyQP) String() string {
	l := cmd("modify_qp").kv("qp", o.QP).kv("state", stateWord(o.To)).kv("mask", maskList(o.Mask))
	m := o.Mask
	n := func(bit verbs.QPAttrMask, k string, v uint64, hex bool) {
		if m&bit == 0 {
			return
		}
		if hex {
			l.hex(k, v)
		} else {
			l.kv(k, strconv.FormatUint(v, 10))
		}
	}
	if m&verbs.QPAttrAccessFlags != 0 {
		l.kv("access", accessList(o.Access))
	}
	n(verbs.QPAttrQKey, "qkey", uint64(o.QKey), true)
	if m&verbs.QPAttrDestQPN != 0 {
		l.kv("peer", o.Peer)
	}
	if m&verbs.QPAttrAV != 0 {
		l.kv("av", o.AV)
	}
	if m&verbs.QPAttrPathMTU != 0 {
		l.num("path_mtu", o.PathMTU)
	}
	n(verbs.QPAttrRQPSN, "rq_psn", uint64(o.RQPSN), true)
	n(verbs.QPAttrMaxDestRDAtomic, "max_dest_rd_atomic", uint64(o.MaxDestRDAtom), false)
	n(verbs.QPAttrMinRNRTimer, "min_rnr_timer", uint64(o.MinRNRTimer), false)
	n(verbs.QPAttrSQPSN, "sq_psn", uint64(o.SQPSN), true)
	n(verbs.QPAttrTimeout, "timeout", uint64(o.Timeout), false)
	n(verbs.QPAttrRetryCnt, "retry_cnt", uint64(o.RetryCnt), false)
	n(verbs.QPAttrRNRRetry, "rnr_retry", uint64(o.RNRRetry), false)
	n(verbs.QPAttrMaxQPRDAtomic, "max_rd_atomic", uint64(o.MaxRDAtomic), false)
	return l.String()
}

func (o TCreateAH) String() string {
	return cmd("create_ah", o.Name).kv("pd", o.PD).kv("av", devName(o.Dev)).String()
}

// list prints one value per request, as a list when there are several.
func list(vals []string) string {
	if len(vals) == 1 {
		return vals[0]
	}
	return "(" + strings.Join(vals, ",") + ")"
}

func (o TPostRecv) String() string {
	ids, sgl := make([]uint64, len(o.WRs)), make([]string, len(o.WRs))
	for i, w := range o.WRs {
		ids[i], sgl[i] = w.WRID, pieces(w.SGL)
	}
	return cmd("post_recv").kv("qp", o.QP).kv("mr", o.MR).ids("wr_id", ids).kv("sge", list(sgl)).String()
}

func (o TPostSend) String() string {
	n := len(o.WRs)
	ids := make([]uint64, n)
	var signaled, inline []uint64
	cols := map[string][]string{}
	any := map[string]bool{}
	put := func(k, v string, used bool) {
		cols[k] = append(cols[k], v)
		any[k] = any[k] || used
	}
	for i, w := range o.WRs {
		ids[i] = w.WRID
		if w.Signaled {
			signaled = append(signaled, w.WRID)
		}
		if w.Inline {
			inline = append(inline, w.WRID)
		}
		op, ok := sendOpWords[w.Op]
		if !ok {
			op = "send"
		}
		put("opcode", op, true)
		put("sge", pieces(w.SGL), true)
		put("imm", strconv.FormatUint(uint64(w.Imm), 10), w.Imm != 0)
		ra := strconv.FormatUint(w.RAddr, 10)
		if w.RAddrMR != "" {
			ra = fmt.Sprintf("%s+%d", w.RAddrMR, w.RAddr)
		}
		put("raddr", ra, w.RAddrMR != "" || w.RAddr != 0)
		put("rkey", fmt.Sprintf("%#x", w.RKey), w.RKey != 0)
		put("compare", strconv.FormatUint(w.Compare, 10), w.Compare != 0)
		put("swap", strconv.FormatUint(w.Swap, 10), w.Swap != 0)
		put("ah", orDash(w.AH), w.AH != "")
		put("dest", orDash(w.Dest), w.Dest != "")
		put("dest_qpn", fmt.Sprintf("%#x", w.DestQPN), w.DestQPN != 0)
		put("qkey", fmt.Sprintf("%#x", w.QKey), w.QKey != 0)
	}
	l := cmd("post_send").kv("qp", o.QP).kv("mr", o.MR).ids("wr_id", ids)
	for _, k := range []string{"opcode", "sge", "imm", "raddr", "rkey", "compare", "swap", "ah", "dest", "dest_qpn", "qkey"} {
		if any[k] {
			l.kv(k, list(cols[k]))
		}
	}
	l.ids("signaled", signaled).ids("inline", inline)
	if o.MW != "" {
		l.kv("mw", o.MW).kv("bind_mr", o.BindMR).kv("bind_at", pieces([]Piece{o.BindAt})).kv("bind_access", accessList(o.BindAccess))
	}
	return l.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (o TPoll) String() string { return cmd("poll_cq").kv("cq", o.CQ).num("n", o.N).String() }

func (o TTick) String() string { return cmd("tick").kv("ns", strconv.FormatUint(o.NS, 10)).String() }

func (o TRun) String() string { return cmd("run").kv("ns", strconv.FormatUint(o.NS, 10)).String() }

func (o TGetAsync) String() string { return cmd("get_async_event").kv("ctx", ctxName(o.Dev)).String() }

func (o TAckAsync) String() string { return cmd("ack_async_event").kv("ctx", ctxName(o.Dev)).String() }

func (o TAllocMW) String() string {
	return cmd("alloc_mw", o.Name).kv("pd", o.PD).num("type", int(o.Type)).String()
}

func (o TBindMW) String() string {
	return cmd("bind_mw").kv("qp", o.QP).kv("mw", o.MW).kv("wr_id", strconv.FormatUint(o.WRID, 10)).kv("mr", o.MR).
		kv("at", pieces([]Piece{o.At})).kv("access", accessList(o.Access)).flag("signaled", o.Signaled).String()
}

func (o TDeallocMW) String() string { return cmd("dealloc_mw").kv("mw", o.MW).String() }

// masked returns o with only the attributes of its mask: what it prints.
func (o TModifyQP) masked() TModifyQP {
	m := o.Mask
	keep := func(bit verbs.QPAttrMask) bool { return m&bit != 0 }
	if !keep(verbs.QPAttrAccessFlags) {
		o.Access = 0
	}
	if !keep(verbs.QPAttrDestQPN) {
		o.Peer = ""
	}
	if !keep(verbs.QPAttrAV) {
		o.AV = ""
	}
	if !keep(verbs.QPAttrPathMTU) {
		o.PathMTU = 0
	}
	if !keep(verbs.QPAttrRQPSN) {
		o.RQPSN = 0
	}
	if !keep(verbs.QPAttrSQPSN) {
		o.SQPSN = 0
	}
	if !keep(verbs.QPAttrQKey) {
		o.QKey = 0
	}
	if !keep(verbs.QPAttrTimeout) {
		o.Timeout = 0
	}
	if !keep(verbs.QPAttrRetryCnt) {
		o.RetryCnt = 0
	}
	if !keep(verbs.QPAttrRNRRetry) {
		o.RNRRetry = 0
	}
	if !keep(verbs.QPAttrMinRNRTimer) {
		o.MinRNRTimer = 0
	}
	if !keep(verbs.QPAttrMaxQPRDAtomic) {
		o.MaxRDAtomic = 0
	}
	if !keep(verbs.QPAttrMaxDestRDAtomic) {
		o.MaxDestRDAtom = 0
	}
	return o
}
