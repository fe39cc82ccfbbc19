package sim

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
