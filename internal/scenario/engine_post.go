package scenario

// engine_post.go holds the commands that post work requests: post_send,
// post_recv and post_srq_recv.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verbsim/verbsim/verbs"
)

// mrFor returns the MR a WR uses: the one named, or the first MR of pd.
func (in *interp) mrFor(a *args, pd string) *mrObj {
	if n := a.ref("mr", "mr"); n != "" {
		return in.obj.mr[n]
	}
	for _, name := range in.obj.order {
		if m, ok := in.obj.mr[name]; ok && m.pd == pd {
			return m
		}
	}
	return nil
}

var sendOpOf = map[string]verbs.WROpcode{"send": verbs.WRSend, "send_imm": verbs.WRSendWithImm, "write": verbs.WRRDMAWrite,
	"write_imm": verbs.WRRDMAWriteWithImm, "read": verbs.WRRDMARead, "cas": verbs.WRAtomicCmpAndSwp, "faa": verbs.WRAtomicFetchAndAdd,
	"send_inv": verbs.WRSendWithInv, "local_inv": verbs.WRLocalInv, "bind_mw": verbs.WRBindMW, "atomic_write": verbs.WRAtomicWrite}

func (in *interp) doPostSend(st *Step, a *args) error {
	n := a.ref("qp", "qp")
	rem := a.ref("remote", "mr")
	if a.err != nil {
		return a.err
	}
	o := in.obj.qp[n]
	m := in.mrFor(a, o.pd)
	if a.err != nil {
		return a.err
	}
	var flags verbs.SendFlags
	if a.has("signaled") {
		flags |= verbs.SendSignaled
	}
	if a.has("solicited") {
		flags |= verbs.SendSolicited
	}
	if a.has("inline") {
		flags |= verbs.SendInline
	}
	ids := a.nums("wr_id")
	wrs := make([]verbs.SendWR, 0, len(ids))
	for j, id := range ids {
		w := in.sendWR(a, j, len(ids), m, rem)
		w.WRID, w.Flags = id, w.Flags|flags
		if slices.Contains(a.nums("signaled"), id) {
			w.Flags |= verbs.SendSignaled
		}
		wrs = append(wrs, w)
	}
	if a.err != nil {
		return a.err
	}
	dest := a.perWRRef("dest", "qp", 0, len(ids))
	wasErr := o.q.State() == verbs.QPStateErr
	k, err := o.q.PostSend(wrs)
	to := ""
	switch {
	case rem != "":
		to = fmt.Sprintf(" to mr %s (rkey %#x)", rem, wrs[0].RKey)
	case len(wrs) > 0 && wrs[0].RKey != 0:
		to = fmt.Sprintf(" (rkey %#x)", wrs[0].RKey)
	}
	if dest != "" {
		to += fmt.Sprintf(" to qp %s (qpn %#x, qkey %#x)", dest, wrs[0].RemoteQPN, wrs[0].RemoteQKey)
	} else if len(wrs) > 0 && wrs[0].RemoteQPN != 0 {
		to += fmt.Sprintf(" to qpn %#x (qkey %#x)", wrs[0].RemoteQPN, wrs[0].RemoteQKey)
	}
	call := fmt.Sprintf("ibv_post_send(%s, %d WR(s): %s %v%s, flags %v)", n, len(wrs), opNames(wrs), fmtIDs(ids), to, flags)
	if err != nil {
		in.verbResult(call, err)
		if k > 0 {
			in.say("the first %d WR(s) were posted; the rest were not (bad_wr)", k)
		}
	} else {
		in.say("%s = ok", call)
	}
	for _, w := range wrs[:k] {
		if !o.sigAll && w.Flags&verbs.SendSignaled == 0 {
			o.unsignaled[w.WRID] = true
		}
	}
	if k > 0 && flags&verbs.SendSignaled == 0 && !o.sigAll {
		in.say("unsignaled: a success makes no completion; an error or flush does")
		in.note("CQ-19")
	}
	if k > 0 && wasErr {
		in.note("FLUSH-05")
	}
	if w := a.str("mw", ""); w != "" && k > 0 {
		in.say("mw %s: rkey %#x (a BIND_MW keeps the window's index, the upper 24 bits: MW-05)", w, in.obj.mw[w].RKey())
		in.note("MW-05")
	}
	return nil
}

func fmtIDs(ids []uint64) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatUint(id, 10))
	}
	return "wr_id " + strings.Join(s, ",")
}

func (in *interp) doPostRecv(st *Step, a *args) error {
	var pd, target string
	var post func([]verbs.RecvWR) (int, error)
	if st.Verb == "post_srq_recv" {
		target = a.ref("srq", "srq")
		if a.err != nil {
			return a.err
		}
		s := in.obj.srq[target]
		for name, p := range in.obj.pd {
			if any(p) == s.PD() {
				pd = name
			}
		}
		post = s.PostRecv
	} else {
		target = a.ref("qp", "qp")
		if a.err != nil {
			return a.err
		}
		pd = in.obj.qp[target].pd
		post = in.obj.qp[target].q.PostRecv
	}
	m := in.mrFor(a, pd)
	if a.err != nil {
		return a.err
	}
	ids := a.nums("wr_id")
	length := a.num("len", 64)
	wrs := make([]verbs.RecvWR, 0, len(ids))
	for j, id := range ids {
		w := verbs.RecvWR{WRID: id}
		if s := a.perWR("sge", j, len(ids), ""); s != "" && m != nil {
			ps, _ := parseSGEs(s)
			w.SGList = sgl(m, ps, m.mr.LKey())
		} else if m != nil && length > 0 {
			w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
		}
		wrs = append(wrs, w)
	}
	if a.err != nil {
		return a.err
	}
	k, err := post(wrs)
	call := fmt.Sprintf("ibv_%s(%s, %d WR(s): %s, %d bytes each)", st.Verb, target, len(wrs), fmtIDs(ids), length)
	if x, ok := a.get("sge"); ok {
		call = fmt.Sprintf("ibv_%s(%s, %d WR(s): %s, scatter lists %s)", st.Verb, target, len(wrs), fmtIDs(ids), strings.Join(x.Vals, " "))
	}
	in.verbResult(call, err)
	if err != nil && k > 0 {
		in.say("the first %d WR(s) were posted; the rest were not (bad_wr)", k)
	}
	return nil
}

// sendWR builds the j-th of n send requests of a post_send from its
// per-request keys: the opcode, the gather list (sge= pieces of m, or len
// bytes at m's start), imm, the remote address and rkey, compare and swap,
// the UD destination, the window of a bind_mw; and inline= (whose gather
// list carries lkey 0: QP-35 reads no lkey of an inline request).
func (in *interp) sendWR(a *args, j, n int, m *mrObj, rem string) verbs.SendWR {
	id := a.nums("wr_id")[j]
	w := verbs.SendWR{Opcode: sendOpOf[a.perWR("opcode", j, n, "send")]}
	inline := slices.Contains(a.nums("inline"), id)
	if inline {
		w.Flags |= verbs.SendInline
	}
	if s := a.perWR("sge", j, n, ""); s != "" && m != nil {
		ps, _ := parseSGEs(s)
		lkey := m.mr.LKey()
		if inline {
			lkey = 0
		}
		w.SGList = sgl(m, ps, lkey)
	} else if length := a.num("len", 64); m != nil && length > 0 {
		if w.Opcode == verbs.WRAtomicCmpAndSwp || w.Opcode == verbs.WRAtomicFetchAndAdd {
			length = 8
		}
		w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
	}
	w.Imm = uint32(a.perWRNum("imm", j, n, 0))
	if rem != "" {
		w.RemoteAddr, w.RKey = in.obj.mr[rem].mr.Addr(), in.obj.mr[rem].mr.RKey()
	}
	if v := a.perWR("raddr", j, n, ""); v != "" {
		name, off, _ := parseAddr(v)
		w.RemoteAddr = off
		if name != "" {
			if in.obj.kind[name] != "mr" {
				if a.err == nil {
					a.err = &scriptError{fmt.Sprintf("%s:%d: raddr=%s: no mr of that name", in.file, a.st.Line, v)}
				}
				return w
			}
			w.RemoteAddr, w.RKey = in.obj.mr[name].mr.Addr()+off, in.obj.mr[name].mr.RKey()
		}
	}
	if keyGiven(a, "rkey") {
		w.RKey = uint32(a.perWRNum("rkey", j, n, 0))
	}
	w.CompareAdd, w.Swap = a.perWRNum("compare", j, n, 0), a.perWRNum("swap", j, n, 0)
	if ah := a.perWRRef("ah", "ah", j, n); ah != "" {
		w.AH = in.obj.ah[ah]
	}
	qkey := uint32(a.perWRNum("qkey", j, n, 0x11111111))
	if dest := a.perWRRef("dest", "qp", j, n); dest != "" {
		w.RemoteQPN, w.RemoteQKey = in.obj.qp[dest].q.Num(), qkey
	} else if keyGiven(a, "dest_qpn") {
		w.RemoteQPN, w.RemoteQKey = uint32(a.perWRNum("dest_qpn", j, n, 0)), qkey
	}
	if w.Opcode == verbs.WRBindMW {
		mw, bm := a.ref("mw", "mw"), a.ref("bind_mr", "mr")
		if a.err != nil {
			return w
		}
		if mw != "" {
			w.MW = in.obj.mw[mw]
		}
		if bm != "" {
			ps, _ := parseSGEs(a.str("bind_at", "-"))
			var at piece
			if len(ps) > 0 {
				at = ps[0]
			}
			w.Bind = verbs.MWBindInfo{MR: in.obj.mr[bm].mr, Addr: in.obj.mr[bm].mr.Addr() + at.off, Length: at.len, Access: accessOf(a.list("bind_access"))}
		}
	}
	return w
}

// opNames names the opcodes of wrs, in order and once each ("SEND/RDMA_WRITE").
func opNames(wrs []verbs.SendWR) string {
	var names []string
	for _, w := range wrs {
		if n := strings.TrimPrefix(w.Opcode.Name(), "IBV_WR_"); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, "/")
}
