//go:build linux

package nicd

import (
	"context"
	"sync"

	"github.com/verbsim/verbsim/internal/cabi"
	"github.com/verbsim/verbsim/sim"
	"github.com/verbsim/verbsim/verbs"
)

// Queue pairs: create, modify, query, destroy. post.go posts.

func init() {
	handlers[opCreateQP] = hCreateQP
	handlers[opDestroyQP] = hDestroyQP
	handlers[opMcast] = hMcast
	handlers[opModifyQP] = hModifyQP
	handlers[opQueryQP] = hQueryQP
	handlers[opCreateXRCRecvQP] = hCreateXRCRecvQP
}

// qpObj is a QP; its scratch slices keep posting allocation free.
type qpObj struct {
	q    *sim.QP
	pd   *pdObj // nil for an XRC_RECV QP
	ctx  *ctxObj
	scq  *cqObj // nil for an XRC_RECV QP
	rcq  *cqObj // nil for an XRC_SEND or XRC_RECV QP
	cptr uint64
	mu   sync.Mutex
	swrs []verbs.SendWR
	rwrs []verbs.RecvWR
	sges []verbs.SGE
}

// qpType is IBV_QPT_XRC_SEND, which has no receive side (XRC-06).
const qpTypeXRCSend = uint32(verbs.QPTypeXRCSend)

func hCreateQP(c *conn, r *req, body []byte, fds []int) (reply, error) {
	p := get[pdObj](c.s, r.Obj)
	in, ok := cabi.Read[qpInit](body)
	if p == nil || !ok || in.CPtr == 0 {
		return reply{}, einval("ibv_create_qp")
	}
	xrc := in.QPType == qpTypeXRCSend
	scq, rcq := get[cqObj](c.s, in.SendCQ), get[cqObj](c.s, in.RecvCQ)
	if scq == nil || (rcq == nil && !xrc) {
		return reply{}, einval("ibv_create_qp")
	}
	attr := sim.QPInitAttr{SendCQ: scq.cq, Cap: in.Cap.Verbs(), Type: verbs.QPType(in.QPType), SQSigAll: in.SQSigAll != 0}
	if rcq != nil {
		attr.RecvCQ = rcq.cq
	}
	if in.SRQ != 0 {
		s := get[srqObj](c.s, in.SRQ)
		if s == nil {
			return reply{}, einval("ibv_create_qp")
		}
		attr.SRQ = s.s
	}
	if in.CompMask&sendOpsFlagsMask != 0 {
		attr.CompMask = sim.QPInitSendOpsFlags
		attr.SendOpsFlags = verbs.QPSendOps(in.SendOpsFlags)
	}
	q, err := p.pd.CreateQP(attr)
	if err != nil {
		return reply{}, err
	}
	return c.s.addQP(&qpObj{q: q, pd: p, ctx: p.ctx, scq: scq, rcq: rcq, cptr: in.CPtr}, c), nil
}

// sendOpsFlagsMask is IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.
const sendOpsFlagsMask = 1 << 6

// addQP records a new QP and returns the reply of its creation.
func (se *session) addQP(o *qpObj, c *conn) reply {
	se.setCptr(o.q, o.cptr)
	se.mu.Lock()
	se.qps[o.key()] = true
	se.mu.Unlock()
	var h uint64
	h = se.add(o.ctx, rankQP, o, func(cc context.Context) error { return se.destroyQP(h, o, cc, true) })
	capOut := cabi.CapOf(o.q.Cap())
	out := c.outBody(cabi.Size[cabi.QPCap]())
	copy(out, cabi.Bytes(&capOut))
	return reply{v: h, w: uint64(o.q.Num()), body: out}
}

// destroyQP destroys a QP; with gone, the async events of it the program
// read and never acknowledged are acknowledged for it.
func (se *session) destroyQP(h uint64, o *qpObj, cc context.Context, gone bool) error {
	k := o.key()
	undo := o.ctx.forget(o.q, gone)
	err := o.q.DestroyContext(cc)
	undo()
	if err != nil {
		return err
	}
	se.setCptr(o.q, 0)
	se.mu.Lock()
	delete(se.qps, k)
	se.mu.Unlock()
	se.drop(h)
	return nil
}

// key names the QP on the fabric.
func (o *qpObj) key() qpKey { return qpKey{o.ctx.c.Device().Name(), o.q.Num()} }

func hDestroyQP(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_destroy_qp")
	}
	return reply{}, c.s.destroyQP(r.Obj, o, c.ctx, false)
}

func hModifyQP(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	a, ok := cabi.Read[cabi.QPAttr](body)
	if o == nil || !ok {
		return reply{}, einval("ibv_modify_qp")
	}
	attr := a.Verbs()
	return reply{}, o.q.Modify(&attr, verbs.QPAttrMask(r.A))
}

func hQueryQP(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	if o == nil {
		return reply{}, einval("ibv_query_qp")
	}
	attr, init, err := o.q.Query(verbs.QPAttrMask(r.A))
	if err != nil {
		return reply{}, err
	}
	var x qpQuery
	x.Attr.Set(&attr)
	x.Cap = cabi.CapOf(init.Cap)
	x.QPType = uint32(init.Type)
	if init.SQSigAll {
		x.SQSigAll = 1
	}
	out := c.outBody(cabi.Size[qpQuery]())
	copy(out, cabi.Bytes(&x))
	return reply{body: out}, nil
}

// hCreateXRCRecvQP is ibv_create_qp_ex of an XRC_RECV QP in a domain
// (XRC-06): no PD, no CQ, no capacities.
func hCreateXRCRecvQP(c *conn, r *req, body []byte, fds []int) (reply, error) {
	x := get[xrcdObj](c.s, r.Obj)
	in, ok := cabi.Read[qpInit](body)
	if x == nil || !ok || in.CPtr == 0 {
		return reply{}, einval("ibv_create_qp_ex")
	}
	q, err := x.x.CreateQP(sim.QPInitAttr{
		Type:         verbs.QPType(in.QPType),
		CompMask:     sim.QPInitMask(in.CompMask),
		SendOpsFlags: verbs.QPSendOps(in.SendOpsFlags),
	})
	if err != nil {
		return reply{}, err
	}
	return c.s.addQP(&qpObj{q: q, ctx: x.ctx, cptr: in.CPtr}, c), nil
}

// hMcast is ibv_attach_mcast (B 1) or ibv_detach_mcast (B 0) of the group
// whose GID is the body, with LID A (MCAST-01, MCAST-02).
func hMcast(c *conn, r *req, body []byte, fds []int) (reply, error) {
	o := get[qpObj](c.s, r.Obj)
	var g verbs.GID
	if o == nil || len(body) != len(g) || r.A > 0xffff || r.B > 1 {
		return reply{}, einval("ibv_attach_mcast")
	}
	copy(g[:], body)
	if r.B == 1 {
		return reply{}, o.q.AttachMcast(g, uint16(r.A))
	}
	return reply{}, o.q.DetachMcast(g, uint16(r.A))
}
