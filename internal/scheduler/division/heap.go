package division

// seatHeap is a binary heap of member indexes that can hold each member at
// most once and update it in place, which container/heap leaves to callers.
type seatHeap struct {
	items []int32
	pos   []int32 // pos[member] is its index in items, -1 when absent
	above func(i, j int) bool
}

func newSeatHeap(n int, above func(i, j int) bool) seatHeap {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return seatHeap{items: make([]int32, 0, n), pos: pos, above: above}
}

func (h *seatHeap) top() (int, bool) {
	if len(h.items) == 0 {
		return 0, false
	}
	return int(h.items[0]), true
}

// set puts member in the heap (or fixes its place) when present, and takes it
// out otherwise.
func (h *seatHeap) set(member int, present bool) {
	p := int(h.pos[member])
	switch {
	case present && p < 0:
		h.items = append(h.items, int32(member))
		h.pos[member] = int32(len(h.items) - 1)
		h.up(len(h.items) - 1)
	case present:
		if !h.up(p) {
			h.down(p)
		}
	case p >= 0:
		last := len(h.items) - 1
		h.swap(p, last)
		h.items = h.items[:last]
		h.pos[member] = -1
		if p < last {
			if !h.up(p) {
				h.down(p)
			}
		}
	}
}

func (h *seatHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.pos[h.items[a]] = int32(a)
	h.pos[h.items[b]] = int32(b)
}

func (h *seatHeap) up(i int) bool {
	moved := false
	for i > 0 {
		parent := (i - 1) / 2
		if !h.above(int(h.items[i]), int(h.items[parent])) {
			break
		}
		h.swap(i, parent)
		i = parent
		moved = true
	}
	return moved
}

func (h *seatHeap) down(i int) {
	n := len(h.items)
	for {
		best := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < n && h.above(int(h.items[c]), int(h.items[best])) {
				best = c
			}
		}
		if best == i {
			return
		}
		h.swap(i, best)
		i = best
	}
}
