//go:build linux

package nicd

import (
	"context"
	"sync"
	"syscall"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/internal/simhook"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Completion queues.

func init() {
	handlers[opCreateCQ] = hCreateCQ
	handlers[opDestroyCQ] = hDestroyCQ
	handlers[opPollCQ] = hPollCQ
	handlers[opReqNotify] = hReqNotify
	handlers[opAckCQ] = hAckCQ
	handlers[opResizeCQ] = hResizeCQ
	handlers[opCQPollEx] = hCQPollEx
}

// cqObj is a CQ; it is its own cq_context in the engine, so that a
// channel event names it. read and acked count the events the program
// took and acknowledged, so that the events of a program that is gone can
// be acknowledged for it.
type cqObj struct {
	cq    *sim.CQ
	ch    *chObj
	ctx   *ctxObj
	cptr  uint64
	mu    sync.Mutex
	wcs   []verbs.WC
	read  int
	acked int
	ring  *cqRing // the fast path the program polls (ring.go), nil before NICD_CQ_RING
}

// sync tells the engine what the program polled from the CQ's ring, so
// that what depends on it (the slots a post may take) is up to date.
func (q *cqObj) sync() {
	if q == nil {
		return
	}
	q.mu.Lock()
	ringed := q.ring != nil
	q.mu.Unlock()
	if ringed {
		simhook.SyncCQ(q.cq)
	}
}

func hCreateCQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[ctxObj](c.s, r.Obj)
	a, ok := cabi.Read[cqReq](body)
	if o == nil || !ok || a.CPtr == 0 {
		return reply{}, einval("ibv_create_cq")
	}
	var ch *chObj
	if a.Channel != 0 {
		if ch = get[chObj](c.s, a.Channel); ch == nil {
			return reply{}, einval("ibv_create_cq")
		}
	}
	q := &cqObj{ch: ch, ctx: o, cptr: a.CPtr}
	attr := sim.CQInitAttr{CQE: int(a.CQE), Context: q, CompVector: int(a.Vector),
		WCFlags: verbs.WCExFlags(a.WCFlags), CompMask: verbs.CQInitAttrMask(a.CompMask), Flags: verbs.CQCreateFlags(a.Flags)}
	if ch != nil {
		attr.Channel = ch.ch
	}
	var cq *sim.CQ
	var err error
	if a.Ex != 0 {
		cq, err = o.c.CreateCQEx(attr)
	} else { // ibv_create_cq: IBV_WC_STANDARD_FLAGS, no comp_mask or flags
		cq, err = o.c.CreateCQ(attr.CQE, attr.Context, attr.Channel, attr.CompVector)
	}
	if err != nil {
		return reply{}, err
	}
	q.cq = cq
	c.s.setCptr(cq, a.CPtr)
	var h uint64
	h = c.s.add(o, rankCQ, q, func(cc context.Context) error { return c.s.destroyCQ(h, q, cc, true) })
	return reply{v: h, w: uint64(cq.CQE())}, nil
}

// destroyCQ destroys a CQ: EBUSY while in use (CQ-11), changing nothing;
// the events queued behind its channel's descriptor are dropped, as the
// kernel drops a destroyed CQ's queued events; with gone (the program is
// gone or closed its context) the events it read and never acknowledged
// are acknowledged for it, so the destroy does not wait for them.
func (se *session) destroyCQ(h uint64, q *cqObj, cc context.Context, gone bool) error {
	if q.cq.Snapshot().Refs > 0 {
		return syscall.EBUSY
	}
	var undo func()
	if q.ch != nil {
		undo = q.ch.purge(q)
	}
	if gone {
		q.mu.Lock()
		if n := q.read - q.acked; n > 0 {
			q.cq.AckEvents(n)
			q.acked = q.read
		}
		q.mu.Unlock()
	}
	undoAsync := q.ctx.forget(q.cq, gone)
	err := q.cq.DestroyContext(cc)
	undoAsync()
	if undo != nil {
		undo()
	}
	if err != nil {
		return err
	}
	se.setCptr(q.cq, 0)
	se.drop(h)
	q.mu.Lock()
	if q.ring != nil {
		q.ring.unmap()
		q.ring = nil
	}
	q.mu.Unlock()
	return nil
}

func hDestroyCQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_destroy_cq")
	}
	return reply{}, c.s.destroyCQ(r.Obj, q, c.ctx, false)
}

// hPollCQ polls up to a completions (at most what a reply holds); an
// error with none polled is the errno.
func hPollCQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_poll_cq")
	}
	want := int(min(r.A, uint64(maxMsg/2/cabi.Size[cabi.WC]())))
	if want == 0 {
		return reply{}, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if cap(q.wcs) < want {
		q.wcs = make([]verbs.WC, want)
	}
	got, err := q.cq.Poll(q.wcs[:want])
	if err != nil && got == 0 {
		return reply{}, err
	}
	sz := cabi.Size[cabi.WC]()
	out := c.outBody(got * sz)
	for i := range got {
		var w cabi.WC
		w.Set(&q.wcs[i])
		copy(out[i*sz:], cabi.Bytes(&w))
	}
	return reply{v: uint64(got), body: out}, nil
}

func hReqNotify(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_req_notify_cq")
	}
	return reply{}, q.cq.ReqNotify(r.A != 0)
}

func hAckCQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_ack_cq_events")
	}
	if err := q.cq.AckEvents(int(r.A)); err != nil {
		return reply{}, err
	}
	q.mu.Lock()
	q.acked += int(r.A)
	q.mu.Unlock()
	return reply{}, nil
}

func hResizeCQ(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_resize_cq")
	}
	if err := q.cq.Resize(int(int32(r.A))); err != nil {
		return reply{}, err
	}
	return reply{v: uint64(q.cq.CQE())}, nil
}

// hCQPollEx is start_poll (a 0), next_poll (1) or end_poll (2) of the
// extended CQ; after a successful start or next it reads every field the
// CQ's wc_flags allow.
func hCQPollEx(c *conn, r *req, body []byte, fds []int) (reply, error) {
	q := get[cqObj](c.s, r.Obj)
	if q == nil {
		return reply{}, einval("ibv_start_poll")
	}
	cq := q.cq
	var err error
	switch r.A {
	case 0:
		err = cq.StartPoll()
	case 1:
		err = cq.NextPoll()
	default:
		return reply{}, cq.EndPoll()
	}
	if err != nil {
		return reply{}, err
	}
	id, st, err := cq.Current()
	if err != nil {
		return reply{}, err
	}
	w := verbs.WC{WRID: id, Status: st}
	if v, err := cq.ReadOpcode(); err == nil {
		w.Opcode = v
	}
	if v, err := cq.ReadVendorErr(); err == nil {
		w.VendorErr = v
	}
	if v, err := cq.ReadByteLen(); err == nil {
		w.ByteLen = v
	}
	if v, err := cq.ReadWCFlags(); err == nil {
		w.WCFlags = v
	}
	if w.WCFlags&verbs.WCWithInv != 0 {
		if v, err := cq.ReadInvalidatedRkey(); err == nil {
			w.ImmData = v
		}
	} else if v, err := cq.ReadImmData(); err == nil {
		w.ImmData = v
	}
	if v, err := cq.ReadQPNum(); err == nil {
		w.QPNum = v
	}
	if v, err := cq.ReadSrcQP(); err == nil {
		w.SrcQP = v
	}
	if v, err := cq.ReadSLID(); err == nil {
		w.SLID = uint16(v)
	}
	if v, err := cq.ReadSL(); err == nil {
		w.SL = v
	}
	if v, err := cq.ReadDLIDPathBits(); err == nil {
		w.DLIDPathBits = v
	}
	var x wcx
	x.WC.Set(&w)
	if v, err := cq.ReadCompletionTS(); err == nil {
		x.TS = v
	}
	if v, err := cq.ReadCompletionWallclockNS(); err == nil {
		x.Wallclock = v
	}
	out := c.outBody(cabi.Size[wcx]())
	copy(out, cabi.Bytes(&x))
	return reply{body: out}, nil
}
