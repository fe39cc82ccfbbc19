package qp

import (
	"math/bits"

	"github.com/verbsim/verbsim/verbs"
)

// A work queue (send or receive) is a ring of slots indexed by a sequence
// number that never goes back, not even when the QP is reset. [done, tail)
// are outstanding; [retired, done) have completed or been flushed, and the
// CQ reports through RetireLocked when their covering completion is polled.
//
// Which slots are occupied depends on the reading of QP-29. Under reading A
// (the default) it is [retired, tail): a slot is free again only once the
// completion covering it is polled. Under reading B (freeOnRetire, rxe) it
// is [done, tail): the slot is free as soon as the engine retires its
// request, and retired is kept up to date but decides nothing. Nothing reads
// a slot below done, so reading B may reuse it at once.
type wq struct {
	slots        []wqe         // send slots, allocated on first use (alloc): an idle QP holds none
	rslots       []rqe         // receive slots (recv queues), the same way
	bindWR       *verbs.SendWR // the BIND_MW request handed to Host.BindLocked, made at the first bind
	mask         uint64        // len(slots)-1: the length is a power of two
	depth        int           // the number of slots
	retired      uint64        // oldest sequence whose covering completion is not polled
	done         uint64        // oldest outstanding sequence
	tail         uint64        // next sequence to post
	maxSGE       int
	inline       int  // max_inline_data (send queues)
	recv         bool // a receive queue: rslots, not slots
	freeOnRetire bool // QP-29 reading B
	hasExt       bool // the send slots have their wqeExt (allocExt)
}

// rqe is a receive slot, and the start of a send slot: the request's
// wr_id and its SGE list, which is carved out of one array per queue when
// the slots are made, so posting allocates nothing.
type rqe struct {
	wrid uint64
	sge  []verbs.SGE // the request's list: length num_sge, capacity max_sge
}

// wqe is a send slot: the fields of the posted request that every opcode
// may use, packed, instead of a copy of the whole SendWR (whose slice
// header the SGE list would duplicate); the fields only atomics, binds and
// UD or XRC destinations use are in x, which points into an array the
// queue makes once a request needs them (allocExt, wqeExt).
type wqe struct {
	rqe
	inline []byte // capacity max_inline_data; the captured payload
	raddr  uint64 // RemoteAddr
	rkey   uint32 // RKey
	imm    uint32 // Imm (or the rkey of SEND_WITH_INV and LOCAL_INV)
	op     verbs.WROpcode
	flags  verbs.SendFlags
	// Transport state of a send WR: its first PSN and how many it uses,
	// the READ responses received, whether it has finished and how.
	psn      uint32
	npkts    uint32
	got      uint32
	status   verbs.WCStatus
	fin      bool
	signaled bool
	x        *wqeExt // nil until the queue has made them (allocExt)
}

// wqeExt holds the fields of a send request that atomics (CompareAdd,
// Swap), binds (MW, Bind), UD (AH, RemoteQPN, RemoteQKey) and XRC
// (RemoteSRQN) read. A queue allocates them, one per slot, when its first
// request that needs them is posted (UD and XRC_SEND queues at their first
// post); from then on every post writes them.
type wqeExt struct {
	compareAdd uint64
	swap       uint64
	ah         verbs.AH
	mw         verbs.MW
	bind       verbs.MWBindInfo
	remoteQPN  uint32
	remoteQKey uint32
	remoteSRQN uint32
}

// noExt is what a slot without ext fields reads: all zero.
var noExt wqeExt

// ext returns e's rare fields (zero when the queue has none).
func (e *wqe) ext() *wqeExt {
	if e.x == nil {
		return &noExt
	}
	return e.x
}

// needsExt reports whether w carries a field only wqeExt holds.
func needsExt(w *verbs.SendWR) bool {
	return w.CompareAdd|w.Swap != 0 || w.AH != nil || w.MW != nil || w.Bind.MR != nil ||
		w.Bind.Addr|w.Bind.Length != 0 || w.Bind.Access != 0 ||
		w.RemoteQPN|w.RemoteQKey|w.RemoteSRQN != 0
}

// allocExt gives every send slot its ext fields.
func (q *wq) allocExt() {
	if q.slots == nil {
		q.alloc()
	}
	ext := make([]wqeExt, len(q.slots))
	for i := range q.slots {
		q.slots[i].x = &ext[i]
	}
	q.hasExt = true
}

// sendWR rebuilds the request e holds (for Host.BindLocked).
func (e *wqe) sendWR() verbs.SendWR {
	x := e.ext()
	return verbs.SendWR{WRID: e.wrid, SGList: e.sge, Opcode: e.op, Flags: e.flags, Imm: e.imm,
		RemoteAddr: e.raddr, RKey: e.rkey, CompareAdd: x.compareAdd, Swap: x.swap, AH: x.ah,
		RemoteQPN: x.remoteQPN, RemoteQKey: x.remoteQKey, MW: x.mw, Bind: x.bind, RemoteSRQN: x.remoteSRQN}
}

func newWQ(depth, maxSGE, maxInline int) wq {
	return wq{depth: depth, maxSGE: maxSGE, inline: maxInline}
}

// newRecvWQ is newWQ for a receive queue (a QP's or an SRQ's).
func newRecvWQ(depth, maxSGE int) wq {
	return wq{depth: depth, maxSGE: maxSGE, recv: true}
}

// alloc makes the slots, with their SGE and inline storage, when the queue
// is first used: a QP that is created and never posted to (the many idle
// QPs of a large test) keeps only the queue's counters. The ring has the
// depth rounded up to a power of two, so that a slot's index is a mask,
// not a division; at most depth of them are occupied (full).
func (q *wq) alloc() {
	depth, maxSGE, maxInline := q.depth, q.maxSGE, q.inline
	depth = 1 << bits.Len(uint(max(depth, 1)-1))
	q.mask = uint64(depth - 1)
	sges := make([]verbs.SGE, depth*maxSGE)
	if q.recv {
		q.rslots = make([]rqe, depth)
		for i := range q.rslots {
			q.rslots[i].sge = sges[i*maxSGE : i*maxSGE : (i+1)*maxSGE]
		}
		return
	}
	q.slots = make([]wqe, depth)
	var bytes []byte
	if maxInline > 0 {
		bytes = make([]byte, depth*maxInline)
	}
	for i := range q.slots {
		q.slots[i].sge = sges[i*maxSGE : i*maxSGE : (i+1)*maxSGE]
		if maxInline > 0 {
			q.slots[i].inline = bytes[i*maxInline : i*maxInline : (i+1)*maxInline]
		}
	}
}

// occupied is the number of slots not yet free.
func (q *wq) occupied() int {
	if q.freeOnRetire {
		return int(q.tail - q.done)
	}
	return int(q.tail - q.retired)
}

// consultSlots records QP-29's reading when a post finds the two readings
// disagree: reading A counts the queue full (completions of retired
// requests are not polled yet) and reading B has room.
func (q *wq) consultSlots(c *Config) {
	if int(q.tail-q.retired) >= q.depth && int(q.tail-q.done) < q.depth {
		c.consult(verbs.ReadingFreeSlotOnRetire)
	}
}

// outstanding is the number of posted work requests not yet completed.
func (q *wq) outstanding() int { return int(q.tail - q.done) }

// full reports whether a post must fail with ENOMEM.
func (q *wq) full() bool { return q.occupied() >= q.depth }

// slot returns the send slot of sequence seq.
func (q *wq) slot(seq uint64) *wqe {
	if q.slots == nil {
		q.alloc()
	}
	return &q.slots[seq&q.mask]
}

// rslot returns the receive slot of sequence seq.
func (q *wq) rslot(seq uint64) *rqe {
	if q.rslots == nil {
		q.alloc()
	}
	return &q.rslots[seq&q.mask]
}

// wrid returns the wr_id of the request in slot seq, of either kind.
func (q *wq) wrid(seq uint64) uint64 {
	if q.recv {
		return q.rslot(seq).wrid
	}
	return q.slot(seq).wrid
}

// push claims the next send slot. Precondition: !q.full().
func (q *wq) push() *wqe {
	e := q.slot(q.tail)
	q.tail++
	return e
}

// rpush claims the next receive slot. Precondition: !q.full().
func (q *wq) rpush() *rqe {
	e := q.rslot(q.tail)
	q.tail++
	return e
}

// RetireLocked frees every slot up to and including seq: the completion of
// seq has been polled, and it covers the earlier unsignaled ones (CQ-20).
// A seq from before a reset is ignored. Under reading B those slots were
// free already.
//
// Precondition: the domain lock is held.
func (q *wq) RetireLocked(seq uint64) {
	if seq+1 > q.retired && seq < q.done {
		q.retired = seq + 1
	}
}

// reset empties the queue without completions (FLUSH-08): every slot is free
// again, and completions of the old requests still in a CQ retire nothing.
func (q *wq) reset() {
	q.retired, q.done = q.tail, q.tail
}

// setSGEs copies list into the slot's SGE storage: one element without a
// call to memmove (the common case), more with copy.
func (e *rqe) setSGEs(list []verbs.SGE) {
	if len(list) == 1 && cap(e.sge) >= 1 {
		e.sge = e.sge[:1]
		e.sge[0] = list[0]
		return
	}
	e.sge = append(e.sge[:0], list...)
}
