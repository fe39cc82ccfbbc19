package ops

import (
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// ParseTraffic reads a traffic run's log back into operations, as
// TrafficLog writes it: one operation per command line; narration, blank
// lines and expected-output blocks are skipped. A line that is no traffic
// operation is an error naming its line. It never panics.
func ParseTraffic(src []byte) ([]TrafficOp, error) {
	var ops []TrafficOp
	err := eachCommand(src, func(a *argReader) error {
		op := a.trafficOp()
		if err := a.done(); err != nil {
			return err
		}
		ops = append(ops, op)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ops, nil
}

// trafficOp reads the traffic operation of the command.
func (a *argReader) trafficOp() TrafficOp {
	switch a.verb {
	case "fabric":
		return a.tfabric()
	case "open_device":
		name := a.name()
		d := a.dev(a.str("dev"))
		if name != ctxName(d) {
			a.fail("the context of device %s is %s", devName(d), ctxName(d))
		}
		return TOpen{Dev: d}
	case "create_cq":
		return TCreateCQ{Name: a.name(), Dev: a.ctx(), CQE: int(a.num("cqe"))}
	case "alloc_pd":
		return TAllocPD{Name: a.name(), Dev: a.ctx()}
	case "reg_mr":
		return TRegMR{Name: a.name(), PD: a.str("pd"), Size: int(a.num("size")), Access: a.access("access")}
	case "fill":
		o := TFill{MR: a.str("mr"), At: a.pieces(a.str("at"))}
		for _, k := range []string{"pattern", "payload", "byte"} {
			if _, ok := a.find(k, false); ok {
				o.Kind, o.Seed = k, a.unum(k)
				break
			}
		}
		if o.Kind == "" {
			a.fail("expected pattern=, payload= or byte=")
		}
		return o
	case "create_qp":
		return TCreateQP{Name: a.name("sq_sig_all"), PD: a.str("pd"), Type: a.qpType(), SendCQ: a.str("send_cq"), RecvCQ: a.str("recv_cq"),
			SendWR: int(a.num("send_wr")), RecvWR: int(a.num("recv_wr")), SendSGE: int(a.num("send_sge")), RecvSGE: int(a.num("recv_sge")),
			Inline: int(a.num("inline")), SigAll: a.flag("sq_sig_all")}
	case "modify_qp":
		return a.tmodify()
	case "create_ah":
		return TCreateAH{Name: a.name(), PD: a.str("pd"), Dev: a.dev(a.str("av"))}
	case "post_recv":
		o := TPostRecv{QP: a.str("qp"), MR: a.str("mr")}
		ids := a.ids("wr_id")
		sgl := a.perWR("sge", len(ids))
		for i, id := range ids {
			o.WRs = append(o.WRs, TRecv{WRID: id, SGL: a.pieces(sgl[i])})
		}
		return o
	case "post_send":
		return a.tpostSend()
	case "poll_cq":
		return TPoll{CQ: a.str("cq"), N: int(a.num("n"))}
	case "tick":
		return TTick{NS: a.unum("ns")}
	case "run":
		return TRun{NS: a.unum("ns")}
	case "get_async_event":
		return TGetAsync{Dev: a.ctx()}
	case "ack_async_event":
		return TAckAsync{Dev: a.ctx()}
	case "alloc_mw":
		t := verbs.MWType(a.num("type"))
		if t != verbs.MWType1 && t != verbs.MWType2 {
			a.fail("type=%d: windows are of type 1 or 2", t)
		}
		return TAllocMW{Name: a.name(), PD: a.str("pd"), Type: t}
	case "bind_mw":
		o := TBindMW{QP: a.str("qp"), MW: a.str("mw"), MR: a.str("mr"), WRID: a.unum("wr_id"), Access: a.access("access"), Signaled: a.flag("signaled")}
		o.At = a.piece(a.str("at"))
		return o
	case "dealloc_mw":
		return TDeallocMW{MW: a.str("mw")}
	}
	a.fail("not an operation of a traffic run")
	return nil
}

func (a *argReader) unum(key string) uint64 {
	v := a.str(key)
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil && a.err == nil {
		a.fail("%s=%s: expected a number", key, v)
	}
	return n
}

// dev reads a device name: a, b, ...
func (a *argReader) dev(s string) int {
	if len(s) != 1 || s[0] < 'a' || s[0] > 'z' {
		a.fail("%q: expected a device (a, b, ...)", s)
		return 0
	}
	return int(s[0] - 'a')
}

// ctx reads ctx=ctxD.
func (a *argReader) ctx() int {
	s := a.str("ctx")
	d, err := strconv.Atoi(strings.TrimPrefix(s, "ctx"))
	if !strings.HasPrefix(s, "ctx") || err != nil || d < 0 || d > 25 {
		a.fail("ctx=%s: expected ctxD", s)
		return 0
	}
	return d
}

// access reads a list of access flags; none when absent.
func (a *argReader) access(key string) verbs.AccessFlags {
	x, ok := a.find(key, false)
	if !ok {
		return 0
	}
	var f verbs.AccessFlags
	for _, v := range x.Vals {
		i := slices.IndexFunc(accessWords, func(w struct {
			f    verbs.AccessFlags
			word string
		}) bool {
			return w.word == v
		})
		if i < 0 {
			a.fail("%s=%s: not an access flag", key, v)
			continue
		}
		f |= accessWords[i].f
	}
	return f
}

// pieces reads a scatter list: OFF+LEN pieces joined by "/", "-" for none.
func (a *argReader) pieces(s string) []Piece {
	if s == "-" || a.err != nil {
		return nil
	}
	var out []Piece
	for _, p := range strings.Split(s, "/") {
		out = append(out, a.piece(p))
	}
	return out
}

func (a *argReader) piece(s string) Piece {
	o, l, ok := strings.Cut(s, "+")
	off, err1 := strconv.ParseUint(o, 0, 64)
	n, err2 := strconv.ParseUint(l, 0, 64)
	if !ok || err1 != nil || err2 != nil {
		a.fail("%q: expected OFF+LEN", s)
	}
	return Piece{off, n}
}

// perWR reads a per-request key for n requests: one value per request, or
// one for all; "" each when absent.
func (a *argReader) perWR(key string, n int) []string {
	out := make([]string, n)
	x, ok := a.find(key, false)
	switch {
	case !ok:
	case len(x.Vals) == 1:
		for i := range out {
			out[i] = x.Vals[0]
		}
	case len(x.Vals) == n:
		copy(out, x.Vals)
	default:
		a.fail("%s has %d values for %d requests", key, len(x.Vals), n)
	}
	return out
}

func (a *argReader) tfabric() TFabric {
	o := TFabric{Seed: a.unum("seed"), MTU: int(a.num("mtu"))}
	if d, ok := a.find("devices", false); !ok || strings.Join(d.Vals, ",") != "a,b" {
		a.fail("a traffic run's devices are (a,b)")
	}
	switch a.str("link") {
	case "ib":
	case "roce":
		o.RoCE = true
	default:
		a.fail("link: expected ib or roce")
	}
	if x, ok := a.find("readings", false); ok {
		if err := o.Readings.Set(x.Vals...); err != nil {
			a.fail("readings: %v", err)
		}
	}
	switch a.str("schedule", "fifo") {
	case "fifo":
	case "random":
		o.Random = true
	default:
		a.fail("schedule: expected fifo or random")
	}
	p := func(k string) float64 {
		v, err := strconv.ParseFloat(a.str(k, "0"), 64)
		if err != nil || v < 0 || v > 1 {
			a.fail("%s: expected a probability", k)
		}
		return v
	}
	o.Drop, o.Dup, o.Delay = p("drop"), p("duplicate"), p("delay")
	if _, ok := a.find("max_delay_ns", false); ok {
		o.MaxDelay = a.unum("max_delay_ns")
	}
	return o
}

func (a *argReader) tmodify() TModifyQP {
	o := TModifyQP{QP: a.str("qp")}
	st := a.str("state")
	if i := slices.Index(stateWords, st); i >= 0 {
		o.To = verbs.QPState(i)
	} else {
		a.fail("state=%s: not a QP state", st)
	}
	if x, ok := a.find("mask", false); ok {
		for _, v := range x.Vals {
			bit := verbs.QPAttrMask(0)
			for b, w := range maskWords {
				if w == v {
					bit = b
				}
			}
			if bit == 0 {
				a.fail("mask: %s is no attribute", v)
			}
			o.Mask |= bit
		}
	} else {
		a.fail("missing mask=")
	}
	m := o.Mask
	u := func(bit verbs.QPAttrMask, k string) uint64 {
		if m&bit == 0 {
			return 0
		}
		return a.unum(k)
	}
	if m&verbs.QPAttrAccessFlags != 0 {
		o.Access = a.access("access")
	}
	o.QKey = uint32(u(verbs.QPAttrQKey, "qkey"))
	if m&verbs.QPAttrDestQPN != 0 {
		o.Peer = a.str("peer")
	}
	if m&verbs.QPAttrAV != 0 {
		o.AV = a.str("av")
	}
	o.PathMTU = int(u(verbs.QPAttrPathMTU, "path_mtu"))
	o.RQPSN = uint32(u(verbs.QPAttrRQPSN, "rq_psn"))
	o.MaxDestRDAtom = uint8(u(verbs.QPAttrMaxDestRDAtomic, "max_dest_rd_atomic"))
	o.MinRNRTimer = uint8(u(verbs.QPAttrMinRNRTimer, "min_rnr_timer"))
	o.SQPSN = uint32(u(verbs.QPAttrSQPSN, "sq_psn"))
	o.Timeout = uint8(u(verbs.QPAttrTimeout, "timeout"))
	o.RetryCnt = uint8(u(verbs.QPAttrRetryCnt, "retry_cnt"))
	o.RNRRetry = uint8(u(verbs.QPAttrRNRRetry, "rnr_retry"))
	o.MaxRDAtomic = uint8(u(verbs.QPAttrMaxQPRDAtomic, "max_rd_atomic"))
	return o
}

func (a *argReader) tpostSend() TPostSend {
	o := TPostSend{QP: a.str("qp"), MR: a.str("mr")}
	ids := a.ids("wr_id")
	if len(ids) == 0 {
		a.fail("missing wr_id=")
	}
	n := len(ids)
	col := map[string][]string{}
	for _, k := range []string{"opcode", "sge", "imm", "raddr", "rkey", "compare", "swap", "ah", "dest", "dest_qpn", "qkey"} {
		col[k] = a.perWR(k, n)
	}
	signaled, inline := a.ids("signaled"), a.ids("inline")
	num := func(k string, i int) uint64 {
		v := col[k][i]
		if v == "" {
			return 0
		}
		x, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			a.fail("%s=%s: expected a number", k, v)
		}
		return x
	}
	for i, id := range ids {
		s := TSend{WRID: id, SGL: a.pieces(orDash(col["sge"][i])), Signaled: slices.Contains(signaled, id), Inline: slices.Contains(inline, id),
			Imm: uint32(num("imm", i)), RKey: uint32(num("rkey", i)), Compare: num("compare", i), Swap: num("swap", i),
			DestQPN: uint32(num("dest_qpn", i)), QKey: uint32(num("qkey", i))}
		s.Op = verbs.WRSend
		if w := col["opcode"][i]; w != "" {
			found := false
			for op, word := range sendOpWords {
				if word == w {
					s.Op, found = op, true
				}
			}
			if !found {
				a.fail("opcode=%s: not a send opcode", w)
			}
		}
		if v := col["raddr"][i]; v != "" {
			if x, err := strconv.ParseUint(v, 0, 64); err == nil {
				s.RAddr = x
			} else if name, off, ok := strings.Cut(v, "+"); ok {
				s.RAddrMR = name
				s.RAddr, err = strconv.ParseUint(off, 0, 64)
				if err != nil {
					a.fail("raddr=%s: expected MR+OFF", v)
				}
			} else {
				a.fail("raddr=%s: expected MR+OFF or a number", v)
			}
		}
		if v := col["ah"][i]; v != "-" {
			s.AH = v
		}
		if v := col["dest"][i]; v != "-" {
			s.Dest = v
		}
		o.WRs = append(o.WRs, s)
	}
	if _, ok := a.find("mw", false); ok {
		o.MW, o.BindMR, o.BindAt, o.BindAccess = a.str("mw"), a.str("bind_mr"), a.piece(a.str("bind_at")), a.access("bind_access")
	}
	return o
}
