package sim

import "github.com/verbsim/verbsim/sim/internal/qp"

// heap is a binary min-heap ordered by less. When moved is set, it is told
// every item's new position, so that an item can be removed from the
// middle (the engine's timers keep their index this way).
type heap[T any] struct {
	items []T
	less  func(a, b T) bool
	moved func(x T, i int)
}

func (h *heap[T]) len() int { return len(h.items) }

// top returns the least item. Precondition: len() > 0.
func (h *heap[T]) top() T { return h.items[0] }

func (h *heap[T]) push(x T) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	h.place(i)
	h.up(i)
}

// pop removes and returns the least item. Precondition: len() > 0.
func (h *heap[T]) pop() T { return h.remove(0) }

// remove removes and returns the item at position i.
func (h *heap[T]) remove(i int) T {
	x := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	return x
}

func (h *heap[T]) place(i int) {
	if h.moved != nil {
		h.moved(h.items[i], i)
	}
}

func (h *heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.place(i)
	h.place(j)
}

func (h *heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *heap[T]) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h.items) && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r := l + 1; r < len(h.items) && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}

// timerHeap is heap[*qp.Timer] with its order and index bookkeeping written
// out: a retry timer is armed and stopped once per reliable message, and the
// generic heap's calls through func values were a tenth of an RC SEND. The
// algorithm is the generic one step for step, so items keeps the same
// layout (Future and the pending description read it).
type timerHeap struct {
	items []*qp.Timer
}

func timerLess(a, b *qp.Timer) bool { return a.At < b.At || (a.At == b.At && a.Seq < b.Seq) }

func (h *timerHeap) len() int { return len(h.items) }

// top returns the earliest timer. Precondition: len() > 0.
func (h *timerHeap) top() *qp.Timer { return h.items[0] }

func (h *timerHeap) push(t *qp.Timer) {
	h.items = append(h.items, t)
	i := len(h.items) - 1
	t.Index = i
	h.up(i)
}

// pop removes and returns the earliest timer. Precondition: len() > 0.
func (h *timerHeap) pop() *qp.Timer { return h.remove(0) }

// remove removes and returns the timer at position i.
func (h *timerHeap) remove(i int) *qp.Timer {
	t := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	return t
}

// fix restores the heap order after the timer at position i changed its
// key.
func (h *timerHeap) fix(i int) {
	h.down(i)
	h.up(i)
}

func (h *timerHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].Index = i
	h.items[j].Index = j
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !timerLess(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h.items) && timerLess(h.items[l], h.items[m]) {
			m = l
		}
		if r := l + 1; r < len(h.items) && timerLess(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}
