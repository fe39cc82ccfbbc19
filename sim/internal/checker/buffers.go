package checker

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/verbsim/verbsim/internal/domain"
	"github.com/verbsim/verbsim/sim/check"
	"github.com/verbsim/verbsim/sim/internal/qp"
	"github.com/verbsim/verbsim/verbs"
)

// buffer is the memory of one work request the program must leave alone
// until its completion (QP-36): where it is, a hash of its bytes when the
// checker last looked, and where the request was posted.
type buffer struct {
	seq      uint64
	wrid     uint64
	sges     []verbs.SGE
	n        uint64 // bytes hashed: the SGEs' length, or what a message filled
	sum      uint64
	posted   site
	reported bool
}

// seed is the hash seed of the buffer checks; any fixed seed will do.
var seed = maphash.MakeSeed()

// maxArrived bounds the received messages a QP keeps for the check at
// poll time: past it the oldest are forgotten, unchecked.
const maxArrived = 4096

// hashLocked hashes the first n bytes of sges in the memory of obj (a QP
// or SRQ); ok is false when some of them are not registered memory.
func (c *Checker) hashLocked(obj any, sges []verbs.SGE, n uint64) (sum uint64, ok bool) {
	mem := c.env.Memory(obj)
	if mem == nil {
		return 0, false
	}
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range sges {
		if n == 0 {
			break
		}
		l := min(uint64(s.Length), n)
		if l == 0 {
			continue
		}
		b, ok := mem(s.Addr, uint32(l))
		if !ok {
			return 0, false
		}
		h.Write(b)
		n -= l
	}
	return h.Sum64(), true
}

// postedLocked follows a work request posted on a QP or SRQ: the signal
// count (QP-30), the keys it names (MR-15), and the buffers to watch
// (QP-36).
func (c *Checker) postedLocked(n *domain.Note) {
	r := c.recordLocked(n.Obj)
	if r == nil {
		return
	}
	sges := n.SGEs
	if !n.Recv {
		c.signalLocked(r, n.WR)
		sges = n.WR.SGList
	}
	if c.on.Has(check.Portability) && len(c.stale) > 0 && (n.Recv || n.WR.Flags&verbs.SendInline == 0) {
		c.staleKeysLocked(r, n, sges)
	}
	if !c.on.Has(check.Buffer) {
		return
	}
	if !n.Recv {
		switch n.WR.Opcode {
		case verbs.WRSend, verbs.WRSendWithImm, verbs.WRSendWithInv, verbs.WRRDMAWrite, verbs.WRRDMAWriteWithImm:
		default:
			return
		}
		if n.WR.Flags&verbs.SendInline != 0 {
			return // copied during the post (QP-35)
		}
	}
	total := verbs.SGEListLength(sges)
	if total == 0 {
		return
	}
	sum, ok := c.hashLocked(r.obj, sges, total)
	if !ok {
		return // not registered: the request fails as it executes
	}
	b := &buffer{seq: n.Seq, wrid: n.WRID, sges: append([]verbs.SGE(nil), sges...), n: total, sum: sum, posted: c.hereQuick()}
	if n.Recv {
		if r.recvs == nil {
			r.recvs = map[uint64]*buffer{}
		}
		r.recvs[n.Seq] = b
	} else {
		if r.sends == nil {
			r.sends = map[uint64]*buffer{}
		}
		r.sends[n.Seq] = b
	}
}

// sendProgressLocked looks again at the source of a send request as its
// bytes go on the wire (NoteSent) and as it completes (NoteDone).
func (c *Checker) sendProgressLocked(n *domain.Note) {
	r := c.recordLocked(n.Obj)
	if r == nil || r.sends == nil {
		return
	}
	b := r.sends[n.Seq]
	if b == nil {
		return
	}
	if n.Kind == domain.NoteDone {
		delete(r.sends, n.Seq)
	}
	if b.reported {
		return
	}
	sum, ok := c.hashLocked(r.obj, b.sges, b.n)
	if !ok || sum == b.sum {
		return
	}
	b.reported = true
	what, then := "the program changed the source buffer of the send request between its post and its transmission",
		"the peer receives the new bytes, not the ones posted; a buffer may be reused only once the request's completion (or a later signaled one's) is polled"
	if n.Kind == domain.NoteDone {
		what = "the program changed the source buffer of the send request after its transmission, before its completion"
		then = "a retransmission would carry the new bytes; a buffer may be reused only once the request's completion (or a later signaled one's) is polled"
	}
	c.bufferFindingLocked(r, b, "ibv_post_send", what, then)
}

// placingLocked looks again at a receive buffer as the first bytes of a
// message are about to be written to it.
func (c *Checker) placingLocked(n *domain.Note) {
	r := c.recordLocked(n.Obj)
	if r == nil || r.recvs == nil {
		return
	}
	b := r.recvs[n.Seq]
	if b == nil || b.reported {
		return
	}
	sum, ok := c.hashLocked(r.obj, b.sges, b.n)
	if !ok || sum == b.sum {
		return
	}
	b.reported = true
	c.bufferFindingLocked(r, b, "ibv_post_recv",
		"the program wrote into the receive buffer after posting it, before a message filled it",
		"the message overwrites what the program wrote; a receive buffer belongs to the adapter until its completion is polled")
}

// receivedLocked keeps a hash of what a message wrote into a receive
// buffer, for the check at the poll of its completion.
func (c *Checker) receivedLocked(n *domain.Note) {
	p := c.takeRecvLocked(n)
	if !c.on.Has(check.Buffer) || n.Status != verbs.WCSuccess || n.N <= 0 {
		return
	}
	q := c.recordLocked(n.With)
	if q == nil {
		return
	}
	sum, ok := c.hashLocked(n.Obj, n.SGEs, uint64(n.N))
	if !ok {
		return
	}
	if len(q.arrived) >= maxArrived {
		q.arrived = q.arrived[1:]
	}
	b := &buffer{seq: n.Seq, wrid: n.WRID, sges: append([]verbs.SGE(nil), n.SGEs...), n: uint64(n.N), sum: sum}
	if p != nil {
		b.posted = p.posted
	}
	q.arrived = append(q.arrived, b)
}

// takeRecvLocked forgets the posted receive a message completes, and the
// ones before it in its queue, which completed without one (flushed).
func (c *Checker) takeRecvLocked(n *domain.Note) *buffer {
	r := c.recordLocked(n.Obj)
	if r == nil || r.recvs == nil {
		return nil
	}
	b := r.recvs[n.Seq]
	for s := range r.recvs {
		if s <= n.Seq {
			delete(r.recvs, s)
		}
	}
	return b
}

// polledLocked looks again at the buffers of the receive completions a
// poll returned: the program must not have written into them since the
// message arrived.
func (c *Checker) polledLocked(n *domain.Note) {
	if !c.on.Has(check.Buffer) {
		return
	}
	dev := c.env.Device(n.Obj)
	for i := range n.WCs {
		w := &n.WCs[i]
		if w.Opcode&verbs.WCRecv == 0 || w.Status != verbs.WCSuccess {
			continue
		}
		q := c.qpLocked(dev, w.QPNum)
		if q == nil || len(q.arrived) == 0 {
			continue
		}
		k := -1
		for j, b := range q.arrived {
			if b.wrid == w.WRID {
				k = j
				break
			}
		}
		if k < 0 {
			continue
		}
		b := q.arrived[k]
		q.arrived = append(q.arrived[:k], q.arrived[k+1:]...)
		sum, ok := c.hashLocked(q.obj, b.sges, b.n)
		if !ok || sum == b.sum {
			continue
		}
		c.bufferFindingLocked(q, b, "ibv_poll_cq",
			"the program wrote into the receive buffer after the message filled it, before polling its completion",
			"the received bytes are overwritten before the program could read them; a receive buffer belongs to the adapter until its completion is polled")
	}
}

// qpLocked returns the record of the live QP numbered num on device dev.
func (c *Checker) qpLocked(dev any, num uint32) *record {
	for _, o := range c.order {
		if o.kind != "qp" || o.gone != nil {
			continue
		}
		q, _ := o.obj.(*qp.QP)
		if q.Num() == num && c.env.Device(q) == dev {
			return o
		}
	}
	return nil
}

// bufferFindingLocked reports a buffer of request b on r that the program
// changed too early (QP-36).
func (c *Checker) bufferFindingLocked(r *record, b *buffer, verb, what, then string) {
	f := check.Finding{Check: check.Buffer, Rule: "QP-36", Verb: verb,
		Objects: []check.Object{c.object(r), {Name: fmt.Sprintf("wr_id %d", b.wrid), Cookie: fmt.Sprintf("wr_id %#x", b.wrid)}},
		What:    fmt.Sprintf("%s (wr_id %d, %d bytes at %#x)", what, b.wrid, b.n, b.sges[0].Addr), Then: then}
	if b.posted.pcs != nil {
		f.Related = append(f.Related, c.related("posted", b.posted))
	}
	c.finding(f, c.hereLocked())
}

// deregisteringLocked reports a memory region deregistered, or a window
// deallocated, while outstanding work requests still name its keys
// (MR-07, MW-03).
func (c *Checker) deregisteringLocked(n *domain.Note) {
	mr := c.recordLocked(n.Obj)
	dev := c.env.Device(n.Obj)
	for k, rr := range c.stale { // its keys may be given out again
		if rr.mr == mr && mr != nil {
			delete(c.stale, k)
		}
	}
	if !c.on.Has(check.Buffer) {
		return
	}
	var hits []string
	objs := []check.Object{c.objectOf(n.Obj)}
	local, remote := false, false
	for _, o := range c.order {
		if o.gone != nil || (o.kind != "qp" && o.kind != "srq") {
			continue
		}
		var each func(func(qp.Pending))
		var peer any
		switch x := o.obj.(type) {
		case *qp.QP:
			each, peer = x.OutstandingLocked, c.env.Peer(x)
		case *qp.SRQ:
			each = x.OutstandingLocked
		}
		onDev := c.env.Device(o.obj) == dev
		before := len(hits)
		each(func(p qp.Pending) {
			if onDev && n.LKey != 0 {
				for _, s := range p.SGEs {
					if s.LKey == n.LKey {
						hits = append(hits, fmt.Sprintf("%s wr_id %d", c.env.Name(o.obj), p.WRID))
						local = true
						return
					}
				}
			}
			if p.RKey != 0 && p.RKey == n.RKey && peer == dev {
				hits = append(hits, fmt.Sprintf("%s wr_id %d (remote)", c.env.Name(o.obj), p.WRID))
				remote = true
			}
		})
		if len(hits) > before {
			objs = append(objs, c.object(o))
		}
	}
	if len(hits) == 0 {
		return
	}
	rule, verb, what := "MR-07", "ibv_dereg_mr", "deregistered"
	if c.env.Kind(n.Obj) == "mw" {
		rule, verb, what = "MW-03", "ibv_dealloc_mw", "deallocated"
	}
	shown := hits
	if len(shown) > 4 {
		shown = append(shown[:4:4], fmt.Sprintf("and %d more", len(hits)-4))
	}
	var fails []string
	if local {
		fails = append(fails, "LOC_PROT_ERR where they read or write it")
	}
	if remote {
		fails = append(fails, "REM_ACCESS_ERR where a peer's request names its rkey")
	}
	c.finding(check.Finding{Check: check.Buffer, Rule: rule, Verb: verb, Objects: objs,
		What: fmt.Sprintf("%s is %s while %d outstanding work request%s still name%s it: %s",
			c.env.Name(n.Obj), what, len(hits), plural(len(hits), "", "s"), plural(len(hits), "s", ""), strings.Join(shown, ", ")),
		Then: "those requests fail as they execute: " + strings.Join(fails, "; ")}, c.hereLocked())
}

// reregLocked records the keys a re-registration replaced (MR-15 A).
func (c *Checker) reregLocked(n *domain.Note) {
	mr := c.recordLocked(n.Obj)
	dev := c.env.Device(n.Obj)
	delete(c.stale, deviceKey{dev, n.NewLKey})
	delete(c.stale, deviceKey{dev, n.NewRKey})
	if n.NewLKey == n.LKey || mr == nil {
		return
	}
	rr := &rereg{mr: mr, at: c.hereLocked()}
	c.stale[deviceKey{dev, n.LKey}] = rr
	c.stale[deviceKey{dev, n.RKey}] = rr
}

// staleKeysLocked reports a request that names a key a re-registration
// replaced: the program relies on ibv_rereg_mr keeping its keys, which
// only some providers do (MR-15).
func (c *Checker) staleKeysLocked(r *record, n *domain.Note, sges []verbs.SGE) {
	dev := c.env.Device(r.obj)
	for _, s := range sges {
		rr := c.stale[deviceKey{dev, s.LKey}]
		if rr == nil {
			continue
		}
		verb := "ibv_post_send"
		if n.Recv {
			verb = "ibv_post_recv"
		}
		c.finding(check.Finding{Check: check.Portability, Rule: "MR-15", Verb: verb,
			Objects: []check.Object{c.object(r), c.object(rr.mr)},
			What: fmt.Sprintf("the request (wr_id %d) names lkey %#x, which ibv_rereg_mr replaced on %s: the program relies on the keys staying, as only providers that change an MR in place (rxe) keep them",
				n.WRID, s.LKey, c.env.Name(rr.mr.obj)),
			Then:    "the request fails with LOC_PROT_ERR here and on providers that give new keys; read mr->lkey and mr->rkey again after ibv_rereg_mr",
			Related: []check.Related{c.related("re-registered", rr.at)}}, c.hereLocked())
		return
	}
}
