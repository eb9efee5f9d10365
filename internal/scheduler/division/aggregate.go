package division

import "container/heap"

// Aggregate places total on as few members as can hold it and divides it
// between them by capacity. Weight is ignored: capacity is the weight.
//
// The first mandatory members are always used (the caller's spread
// constraints need them). Members already holding replicas are kept and only
// adjusted, so a scale moves as little as Adjust does; others are added
// largest capacity first (by name among equals) until the chosen members can
// hold total. With no replicas held anywhere the division is from scratch.
func Aggregate(total int64, members []Member, mandatory int) ([]int64, error) {
	if err := validate(total, members); err != nil {
		return nil, err
	}
	chosen := make([]bool, len(members))
	incremental := false
	var room int64
	choose := func(i int) {
		if !chosen[i] {
			chosen[i] = true
			room = satAdd(room, members[i].Capacity)
		}
	}
	for i := 0; i < mandatory && i < len(members); i++ {
		choose(i)
	}
	for i := range members {
		if members[i].Current > 0 {
			incremental = true
			choose(i)
		}
	}
	if room < total {
		// Largest capacity first, by name among equals. A heap finds the few
		// members needed without sorting the whole fleet.
		rest := make([]int, 0, len(members))
		for i := range members {
			if !chosen[i] {
				rest = append(rest, i)
			}
		}
		h := &largestFirst{members: members, idx: rest}
		heap.Init(h)
		for room < total && h.Len() > 0 {
			choose(heap.Pop(h).(int))
		}
	}
	if room < total {
		return nil, &InsufficientCapacityError{Want: total, Have: room}
	}

	// Divide among the chosen by capacity; a capacity beyond total counts as
	// total so that two members able to hold everything weigh the same.
	sub := make([]Member, 0, len(members))
	index := make([]int, 0, len(members))
	for i := range members {
		if chosen[i] {
			m := members[i]
			m.Weight = min(m.Capacity, max(total, 1))
			sub = append(sub, m)
			index = append(index, i)
		}
	}
	divide := Apportion
	if incremental {
		divide = Adjust
	}
	part, err := divide(total, sub)
	if err != nil {
		return nil, err
	}
	seats := make([]int64, len(members))
	for k, i := range index {
		seats[i] = part[k]
	}
	return seats, nil
}

func satAdd(a, b int64) int64 {
	if a > Unlimited-b {
		return Unlimited
	}
	return a + b
}

// largestFirst is a heap of member indexes, largest capacity on top.
type largestFirst struct {
	members []Member
	idx     []int
}

func (h *largestFirst) Len() int { return len(h.idx) }
func (h *largestFirst) Less(a, b int) bool {
	ma, mb := &h.members[h.idx[a]], &h.members[h.idx[b]]
	if ma.Capacity != mb.Capacity {
		return ma.Capacity > mb.Capacity
	}
	return ma.Name < mb.Name
}
func (h *largestFirst) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *largestFirst) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *largestFirst) Pop() any {
	last := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return last
}
