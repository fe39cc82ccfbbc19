package qp

import (
	"math/bits"

	"github.com/verbsim/verbsim/sim/wc"
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
	slots        []wqe  // allocated on first use (alloc): an idle QP holds none
	mask         uint64 // len(slots)-1: the length is a power of two
	depth        int    // the number of slots
	retired      uint64 // oldest sequence whose covering completion is not polled
	done         uint64 // oldest outstanding sequence
	tail         uint64 // next sequence to post
	maxSGE       int
	inline       int  // max_inline_data (send queues)
	freeOnRetire bool // QP-29 reading B
}

// wqe is one slot. Its SGE and inline storage are carved out of one array
// per queue at QP creation, so posting allocates nothing.
type wqe struct {
	seq uint64
	// wr is the posted request; its SGList aliases sge. A receive request
	// uses only WRID and SGList.
	wr       SendWR
	sge      []SGE  // capacity maxSGE
	inline   []byte // capacity max_inline_data; the captured payload
	signaled bool
	// Transport state of a send WR: its first PSN and how many it uses,
	// the READ responses received, whether it has finished and how.
	psn    uint32
	npkts  uint32
	got    uint32
	fin    bool
	status wc.Status
}

func newWQ(depth, maxSGE, maxInline int) wq {
	return wq{depth: depth, maxSGE: maxSGE, inline: maxInline}
}

// alloc makes the slots, with their SGE and inline storage, when the queue
// is first used: a QP that is created and never posted to (the many idle
// QPs of a large test) keeps only the queue's counters. The ring has the
// depth rounded up to a power of two, so that a slot's index is a mask,
// not a division; at most depth of them are occupied (full).
func (q *wq) alloc() {
	depth, maxSGE, maxInline := q.depth, q.maxSGE, q.inline
	depth = 1 << bits.Len(uint(max(depth, 1)-1))
	q.slots = make([]wqe, depth)
	q.mask = uint64(depth - 1)
	sges := make([]SGE, depth*maxSGE)
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

// outstanding is the number of posted work requests not yet completed.
func (q *wq) outstanding() int { return int(q.tail - q.done) }

// full reports whether a post must fail with ENOMEM.
func (q *wq) full() bool { return q.occupied() >= q.depth }

// slot returns the slot of sequence seq.
func (q *wq) slot(seq uint64) *wqe {
	if q.slots == nil {
		q.alloc()
	}
	return &q.slots[seq&q.mask]
}

// push claims the next slot. Precondition: !q.full().
func (q *wq) push() *wqe {
	e := q.slot(q.tail)
	e.seq = q.tail
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
