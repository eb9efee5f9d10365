package division

import "math/bits"

// seatAbove says whether seat ki of member i has a higher priority than seat
// kj of member j. Priorities w/(2k-1) are compared exactly by cross
// multiplication in 128 bits; ties go to the higher weight, then the larger
// capacity (so that small divisions favour roomier members instead of the
// same alphabetically first ones every time), then the smaller name. Seats
// are numbered from 1.
func seatAbove(mi *Member, ki int64, mj *Member, kj int64) bool {
	lh, ll := bits.Mul64(uint64(mi.Weight), uint64(2*kj-1))
	rh, rl := bits.Mul64(uint64(mj.Weight), uint64(2*ki-1))
	if lh != rh {
		return lh > rh
	}
	if ll != rl {
		return ll > rl
	}
	if mi.Weight != mj.Weight {
		return mi.Weight > mj.Weight
	}
	if mi.Capacity != mj.Capacity {
		return mi.Capacity > mj.Capacity
	}
	return mi.Name < mj.Name
}

// book holds a division in progress and two heaps over it: the best seat not
// yet given (to add) and the worst seat held (to remove).
type book struct {
	members []Member
	seats   []int64
	give    seatHeap // members that may take one more seat, best next seat on top
	take    seatHeap // members holding a seat, worst last seat on top
}

func newBook(members []Member, seats []int64) *book {
	b := &book{members: members, seats: seats}
	b.give = newSeatHeap(len(members), func(i, j int) bool {
		return seatAbove(&b.members[i], b.seats[i]+1, &b.members[j], b.seats[j]+1)
	})
	b.take = newSeatHeap(len(members), func(i, j int) bool {
		return seatAbove(&b.members[j], b.seats[j], &b.members[i], b.seats[i])
	})
	for i := range members {
		b.refresh(i)
	}
	return b
}

func (b *book) canGive(i int) bool {
	return b.members[i].Weight > 0 && b.seats[i] < b.members[i].Capacity
}

// refresh puts member i in or out of each heap after its seats changed.
func (b *book) refresh(i int) {
	b.give.set(i, b.canGive(i))
	b.take.set(i, b.seats[i] > 0)
}

// add gives n more seats, best first; it reports false if room ran out.
func (b *book) add(n int64) bool {
	for ; n > 0; n-- {
		i, ok := b.give.top()
		if !ok {
			return false
		}
		b.seats[i]++
		b.refresh(i)
	}
	return true
}

// remove takes n seats away, worst first.
func (b *book) remove(n int64) {
	for ; n > 0; n-- {
		i, ok := b.take.top()
		if !ok {
			return
		}
		b.seats[i]--
		b.refresh(i)
	}
}

// settle moves seats until no seat not given outranks a seat held: the
// division is then exactly the highest-priority seats.
func (b *book) settle() {
	for {
		g, okG := b.give.top()
		t, okT := b.take.top()
		if !okG || !okT || g == t {
			return
		}
		if !seatAbove(&b.members[g], b.seats[g]+1, &b.members[t], b.seats[t]) {
			return
		}
		b.seats[g]++
		b.seats[t]--
		b.refresh(g)
		b.refresh(t)
	}
}
