//go:build linux

package nicd

import (
	"encoding/binary"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Posting: ibv_post_send, ibv_post_recv, ibv_post_srq_recv and the work
// request builder. A post's SGEs name the program's memory by the
// addresses it registered (process_vm_*, mem.go); an inline payload came
// with the request, copied by the library when ibv_post_send was called,
// and is posted from the PD's bounce buffer.

func init() {
	handlers[opPostSend] = hPostSend
	handlers[opPostRecv] = hPostRecv
	handlers[opPostSRQRecv] = hPostSRQRecv
	handlers[opWRBatch] = hWRBatch
}

// maxSGEs bounds the SGEs of one work request, far above any device's
// max_sge, so a malformed count is refused before anything is allocated.
const maxSGEs = 1 << 16

// bounce returns the PD's buffer for inline payloads, registered in the
// daemon's memory; the caller holds the QP's PD lock (p.mu).
func (p *pdObj) bounceBuf() (*sim.MR, []byte, error) {
	if p.bounce == nil {
		buf := make([]byte, maxMsg)
		mr, err := p.pd.RegMR(buf, 0)
		if err != nil {
			return nil, nil, err
		}
		p.bounce, p.bbuf = mr, buf
	}
	return p.bounce, p.bbuf, nil
}

// sges reads n struct ibv_sge from the front of body into dst.
func sges(dst []verbs.SGE, body []byte, n int) ([]verbs.SGE, []byte, bool) {
	sz := cabi.Size[cabi.SGE]()
	if n < 0 || n > maxSGEs || len(body) < n*sz {
		return dst, body, false
	}
	for i := range n {
		s, _ := cabi.Read[cabi.SGE](body[i*sz:])
		dst = append(dst, s.Verbs())
	}
	return dst, body[n*sz:], true
}

// pad8 is n rounded up to a multiple of 8.
func pad8(n int) int { return (n + 7) &^ 7 }

// hPostSend is ibv_post_send; v is how many requests were posted before
// the one that failed.
func hPostSend(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_post_send")
	}
	n := int(r.A)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.swrs, o.sges = o.swrs[:0], o.sges[:0]
	type inl struct {
		wr   int
		data []byte
	}
	var inlines []inl
	counts := make([]int, 0, n)
	for i := range n {
		w, ok := cabi.Read[swr](body)
		if !ok {
			return reply{v: uint64(i)}, syscall.EINVAL
		}
		body = body[cabi.Size[swr]():]
		var good bool
		if o.sges, body, good = sges(o.sges, body, int(w.NumSGE)); !good {
			return reply{v: uint64(i)}, syscall.EINVAL
		}
		if int(w.InlineLen) > len(body) {
			return reply{v: uint64(i)}, syscall.EINVAL
		}
		if w.InlineLen > 0 || w.Flags&uint32(verbs.SendInline) != 0 {
			inlines = append(inlines, inl{i, body[:w.InlineLen]})
		}
		body = body[min(len(body), pad8(int(w.InlineLen))):]
		sw := verbs.SendWR{
			WRID: w.WRID, Opcode: verbs.WROpcode(w.Opcode), Flags: verbs.SendFlags(w.Flags),
			Imm: w.Imm, RemoteAddr: w.RemoteAddr, RKey: w.RKey, CompareAdd: w.CompareAdd, Swap: w.Swap,
			RemoteQPN: w.RemoteQPN, RemoteQKey: w.RemoteQKey, RemoteSRQN: w.XRCSRQN,
		}
		if w.AH != 0 {
			a := get[ahObj](c.s, w.AH)
			if a == nil {
				return reply{v: uint64(i)}, syscall.EINVAL
			}
			sw.AH = a.ah
		}
		if w.MW != 0 || w.Opcode == uint32(verbs.WRBindMW) {
			if !c.s.bindFromReq(&w, &sw) {
				return reply{v: uint64(i)}, syscall.EINVAL
			}
		}
		o.swrs = append(o.swrs, sw)
		counts = append(counts, int(w.NumSGE))
	}
	off := 0
	for i := range o.swrs {
		k := counts[i]
		o.swrs[i].SGList = o.sges[off : off+k : off+k]
		off += k
	}
	if len(inlines) > 0 && o.pd != nil {
		// The payloads, one after the other in the PD's bounce buffer,
		// each an SGE of it: the engine copies inline payloads when they
		// are posted, so the buffer is free again when PostSend returns.
		o.pd.mu.Lock()
		defer o.pd.mu.Unlock()
		mr, buf, err := o.pd.bounceBuf()
		if err != nil {
			return reply{}, err
		}
		at := 0
		for _, in := range inlines {
			if len(in.data) == 0 {
				o.swrs[in.wr].SGList = nil
				continue
			}
			copy(buf[at:], in.data)
			o.swrs[in.wr].SGList = []verbs.SGE{{Addr: mr.Addr() + uint64(at), Length: uint32(len(in.data)), LKey: mr.LKey()}}
			at += len(in.data)
		}
	}
	o.scq.sync() // the slots freed by the completions polled from the ring
	got, err := o.q.PostSend(o.swrs)
	return reply{v: uint64(got)}, err
}

// bindFromReq completes sw, a BIND_MW request, from w's handles; false
// when a handle names nothing. No window at all is a nil window, which the
// engine accepts at post and completes with MW_BIND_ERR, as in process.
func (se *session) bindFromReq(w *swr, sw *verbs.SendWR) bool {
	var win *sim.MW
	if w.MW != 0 {
		m := get[mwObj](se, w.MW)
		if m == nil {
			return false
		}
		win = m.mw
	}
	// struct ibv_mw_bind_info travels in remote_addr (addr), compare_add
	// (length) and mw_access; rkey is the new key.
	info := verbs.MWBindInfo{Addr: w.RemoteAddr, Length: w.CompareAdd, Access: verbs.AccessFlags(w.MWAccess)}
	if w.MR != 0 {
		m := get[mrObj](se, w.MR)
		if m == nil {
			return false
		}
		info.MR = m.mr
	}
	sw.MW, sw.Bind = win, info
	return true
}

// recvs reads n receive requests of body into dst, their SGEs into sg.
func recvs(dst []verbs.RecvWR, sg []verbs.SGE, body []byte, n int) ([]verbs.RecvWR, []verbs.SGE, bool) {
	dst, sg = dst[:0], sg[:0]
	counts := make([]int, 0, n)
	for range n {
		w, ok := cabi.Read[rwr](body)
		if !ok {
			return dst, sg, false
		}
		body = body[cabi.Size[rwr]():]
		if sg, body, ok = sges(sg, body, int(w.NumSGE)); !ok {
			return dst, sg, false
		}
		dst = append(dst, verbs.RecvWR{WRID: w.WRID})
		counts = append(counts, int(w.NumSGE))
	}
	off := 0
	for i := range dst {
		dst[i].SGList = sg[off : off+counts[i] : off+counts[i]]
		off += counts[i]
	}
	return dst, sg, true
}

func hPostRecv(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_post_recv")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var ok bool
	if o.rwrs, o.sges, ok = recvs(o.rwrs, o.sges, body, int(r.A)); !ok {
		return reply{}, syscall.EINVAL
	}
	o.rcq.sync()
	got, err := o.q.PostRecv(o.rwrs)
	return reply{v: uint64(got)}, err
}

func hPostSRQRecv(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[srqObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_post_srq_recv")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var ok bool
	if o.rwrs, o.sges, ok = recvs(o.rwrs, o.sges, body, int(r.A)); !ok {
		return reply{}, syscall.EINVAL
	}
	c.s.syncCQs() // the SRQ's completions may be in any CQ of the process
	got, err := o.s.PostRecv(o.rwrs)
	return reply{v: uint64(got)}, err
}

// The builder operations of capi.h's CAPI_WR_* and nicd.h's lists.
const (
	wrStart = iota + 1
	wrComplete
	wrAbort
	wrSend
	wrSendImm
	wrSendInv
	wrRDMAWrite
	wrRDMAWriteImm
	wrRDMARead
	wrAtomicCmpSwp
	wrAtomicFetchAdd
	wrLocalInv
	wrSetSGE
	wrSetUDAddr
	wrSetInline
	wrSetXRCSRQN
	wrBindMW
	wrAtomicWrite
	wrSetSGEList    = 100 // NICD_WR_SET_SGE_LIST: num SGEs follow
	wrSetInlineList = 101 // NICD_WR_SET_INLINE_LIST: num lengths (uint64), then the bytes
)

// hWRBatch replays one ibv_wr_start .. ibv_wr_complete (or wr_abort) of
// the program, recorded by the library, on the QP's builder: the engine
// sees the calls in order, with the wr_id and flags of each, and the
// reply is wr_complete's errno.
func hWRBatch(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_wr_complete")
	}
	q := o.q
	o.mu.Lock()
	defer o.mu.Unlock()
	o.scq.sync()
	sz := cabi.Size[wrOp]()
	for range int(r.A) {
		w, ok := cabi.Read[wrOp](body)
		if !ok || len(body)-sz < int(w.Len) {
			q.WRAbort()
			return reply{}, syscall.EINVAL
		}
		data := body[sz : sz+int(w.Len)]
		body = body[min(len(body), sz+pad8(int(w.Len))):]
		switch w.Op {
		case wrSend, wrSendImm, wrSendInv, wrRDMAWrite, wrRDMAWriteImm, wrRDMARead, wrAtomicCmpSwp,
			wrAtomicFetchAdd, wrLocalInv, wrBindMW, wrAtomicWrite:
			q.SetWRID(w.WRID)
			q.SetWRFlags(verbs.SendFlags(w.Flags))
		}
		switch w.Op {
		case wrStart:
			q.WRStart()
		case wrComplete:
			return reply{}, q.WRComplete()
		case wrAbort:
			q.WRAbort()
			return reply{}, nil
		case wrSend:
			q.WRSend()
		case wrSendImm:
			q.WRSendImm(w.A32)
		case wrSendInv:
			q.WRSendInv(w.A32)
		case wrRDMAWrite:
			q.WRRDMAWrite(w.A32, w.A64)
		case wrRDMAWriteImm:
			q.WRRDMAWriteImm(w.A32, w.A64, w.B32)
		case wrRDMARead:
			q.WRRDMARead(w.A32, w.A64)
		case wrAtomicCmpSwp:
			q.WRAtomicCmpSwp(w.A32, w.A64, w.B64, w.C64)
		case wrAtomicFetchAdd:
			q.WRAtomicFetchAdd(w.A32, w.A64, w.B64)
		case wrAtomicWrite:
			var v [8]byte
			binary.NativeEndian.PutUint64(v[:], w.B64)
			q.WRAtomicWrite(w.A32, w.A64, v)
		case wrLocalInv:
			q.WRLocalInv(w.A32)
		case wrSetSGE:
			q.WRSetSGE(w.A32, w.A64, w.B32)
		case wrSetXRCSRQN:
			q.WRSetXRCSRQN(w.A32)
		case wrSetUDAddr:
			var ah *sim.AH
			if a := get[ahObj](c.s, w.Obj); a != nil {
				ah = a.ah
			}
			q.WRSetUDAddr(ah, w.A32, w.B32)
		case wrBindMW:
			var mw *sim.MW
			if m := get[mwObj](c.s, w.Obj); m != nil {
				mw = m.mw
			}
			info := verbs.MWBindInfo{Addr: w.A64, Length: w.B64, Access: verbs.AccessFlags(w.B32)}
			if m := get[mrObj](c.s, w.C64); m != nil {
				info.MR = m.mr
			}
			q.WRBindMW(mw, w.A32, info)
		case wrSetInline:
			q.WRSetInlineData(data)
		case wrSetSGEList:
			list, _, ok := sges(nil, data, int(w.Num))
			if !ok {
				q.WRAbort()
				return reply{}, syscall.EINVAL
			}
			q.WRSetSGEList(list)
		case wrSetInlineList:
			bufs, ok := inlineList(data, int(w.Num))
			if !ok {
				q.WRAbort()
				return reply{}, syscall.EINVAL
			}
			q.WRSetInlineDataList(bufs)
		default:
			q.WRAbort()
			return reply{}, syscall.EINVAL
		}
	}
	// A batch without its wr_complete: as if aborted.
	q.WRAbort()
	return reply{}, syscall.EINVAL
}

// inlineList splits the data of NICD_WR_SET_INLINE_LIST: n lengths, then
// the buffers.
func inlineList(data []byte, n int) ([][]byte, bool) {
	if n < 0 || n > maxSGEs || len(data) < 8*n {
		return nil, false
	}
	bufs := make([][]byte, n)
	rest := data[8*n:]
	for i := range n {
		l := binary.NativeEndian.Uint64(data[8*i:])
		if l > uint64(len(rest)) {
			return nil, false
		}
		bufs[i], rest = rest[:l], rest[l:]
	}
	return bufs, true
}
