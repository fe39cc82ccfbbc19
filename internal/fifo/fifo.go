// Package fifo implements a growable first-in, first-out ring buffer.
//
// It is the queue behind completion channels and async event queues. A FIFO
// reuses its storage, so a steady stream of Push and Pop allocates nothing once
// the ring has grown to the high-water mark. It is not safe for concurrent use;
// its owner serializes access.
package fifo

// FIFO is a first-in, first-out queue of T. The zero value is an empty queue
// ready to use.
type FIFO[T any] struct {
	buf  []T
	head int // index of the oldest element
	n    int // number of elements
}

// Len reports the number of queued elements.
func (q *FIFO[T]) Len() int { return q.n }

// Push appends v at the tail.
func (q *FIFO[T]) Push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	i := q.head + q.n // < 2*len(q.buf): one subtraction, not a division
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = v
	q.n++
}

// Pop removes and returns the oldest element. ok is false when q is empty.
func (q *FIFO[T]) Pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	var zero T
	v = q.buf[q.head]
	q.buf[q.head] = zero // drop references held by the slot
	q.n--
	if q.head++; q.n == 0 || q.head == len(q.buf) {
		q.head = 0
	}
	return v, true
}

// At returns the i-th oldest element. Precondition: 0 <= i < q.Len().
func (q *FIFO[T]) At(i int) T { return q.buf[(q.head+i)%len(q.buf)] }

// RemoveIf deletes every element for which drop returns true, keeping the
// order of the others, and reports how many it removed.
func (q *FIFO[T]) RemoveIf(drop func(T) bool) int {
	kept := 0
	var zero T
	for i := 0; i < q.n; i++ {
		v := q.buf[(q.head+i)%len(q.buf)]
		if drop(v) {
			continue
		}
		q.buf[(q.head+kept)%len(q.buf)] = v
		kept++
	}
	for i := kept; i < q.n; i++ {
		q.buf[(q.head+i)%len(q.buf)] = zero
	}
	removed := q.n - kept
	q.n = kept
	if q.n == 0 {
		q.head = 0
	}
	return removed
}

func (q *FIFO[T]) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 8
	}
	buf := make([]T, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}
