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
	"write_imm": verbs.WRRDMAWriteWithImm, "read": verbs.WRRDMARead, "cas": verbs.WRAtomicCmpAndSwp, "faa": verbs.WRAtomicFetchAndAdd}

func (in *interp) doPostSend(st *Step, a *args) error {
	n := a.ref("qp", "qp")
	rem := a.ref("remote", "mr")
	ah, dest := a.ref("ah", "ah"), a.ref("dest", "qp")
	if a.err != nil {
		return a.err
	}
	o := in.obj.qp[n]
	m := in.mrFor(a, o.pd)
	if a.err != nil {
		return a.err
	}
	op := sendOpOf[a.str("opcode", "send")]
	length := a.num("len", 64)
	if op == verbs.WRAtomicCmpAndSwp || op == verbs.WRAtomicFetchAndAdd {
		length = 8
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
	for _, id := range ids {
		w := verbs.SendWR{WRID: id, Opcode: op, Flags: flags}
		if slices.Contains(a.nums("signaled"), id) {
			w.Flags |= verbs.SendSignaled
		}
		if length > 0 && m != nil {
			w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
		}
		if rem != "" {
			w.RemoteAddr, w.RKey = in.obj.mr[rem].mr.Addr(), in.obj.mr[rem].mr.RKey()
		}
		if _, ok := a.get("rkey"); ok {
			w.RKey = uint32(a.num("rkey", 0))
		}
		if ah != "" {
			w.AH = in.obj.ah[ah]
		}
		if dest != "" {
			w.RemoteQPN, w.RemoteQKey = in.obj.qp[dest].q.Num(), uint32(a.num("qkey", 0x11111111))
		} else if _, ok := a.get("dest_qpn"); ok {
			w.RemoteQPN, w.RemoteQKey = uint32(a.num("dest_qpn", 0)), uint32(a.num("qkey", 0x11111111))
		}
		wrs = append(wrs, w)
	}
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
	call := fmt.Sprintf("ibv_post_send(%s, %d WR(s): %s %v%s, flags %v)", n, len(wrs), strings.TrimPrefix(op.Name(), "IBV_WR_"), fmtIDs(ids), to, flags)
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
	for _, id := range ids {
		w := verbs.RecvWR{WRID: id}
		if m != nil && length > 0 {
			w.SGList = []verbs.SGE{{Addr: m.mr.Addr(), Length: uint32(min(length, uint64(len(m.buf)))), LKey: m.mr.LKey()}}
		}
		wrs = append(wrs, w)
	}
	k, err := post(wrs)
	call := fmt.Sprintf("ibv_%s(%s, %d WR(s): %s, %d bytes each)", st.Verb, target, len(wrs), fmtIDs(ids), length)
	in.verbResult(call, err)
	if err != nil && k > 0 {
		in.say("the first %d WR(s) were posted; the rest were not (bad_wr)", k)
	}
	return nil
}
