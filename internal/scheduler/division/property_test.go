package division

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

const iterations = 3000

func randomMembers(r *rand.Rand) []Member {
	n := 1 + r.IntN(12)
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{Name: fmt.Sprintf("m%02d", i), Weight: int64(r.IntN(6)), Capacity: Unlimited}
		if r.IntN(10) == 0 {
			ms[i].Weight = int64(r.IntN(1_000_000))
		}
		if r.IntN(3) == 0 {
			ms[i].Capacity = int64(r.IntN(40))
		}
	}
	// One dominant member among small ones is where Webster departs from
	// rounding quotas; make it common.
	if r.IntN(3) == 0 {
		ms[0].Weight = int64(1 + r.IntN(100))
		for i := 1; i < n; i++ {
			ms[i].Weight = int64(1 + r.IntN(10))
		}
	}
	return ms
}

// sequential is the textbook highest-averages procedure: give seats one at a
// time to the best next seat. Apportion must agree with it exactly.
func sequential(total int64, ms []Member) ([]int64, bool) {
	seats := make([]int64, len(ms))
	for range total {
		best := -1
		for i := range ms {
			if ms[i].Weight == 0 || seats[i] >= ms[i].Capacity {
				continue
			}
			if best < 0 || seatAbove(&ms[i], seats[i]+1, &ms[best], seats[best]+1) {
				best = i
			}
		}
		if best < 0 {
			return nil, false
		}
		seats[best]++
	}
	return seats, true
}

func sum(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

func moved(a, b []int64) int64 {
	var d int64
	for i := range a {
		if a[i] > b[i] {
			d += a[i] - b[i]
		} else {
			d += b[i] - a[i]
		}
	}
	return d
}

func TestPropertyApportionEqualsSequentialHighestAverages(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for it := range iterations {
		ms := randomMembers(r)
		total := int64(r.IntN(150))
		want, ok := sequential(total, ms)
		got, err := Apportion(total, ms)
		if !ok {
			var short *InsufficientCapacityError
			if !errors.As(err, &short) {
				t.Fatalf("#%d %v total %d: err = %v, want insufficient capacity", it, ms, total, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("#%d %v total %d: %v", it, ms, total, err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("#%d %v total %d: Apportion = %v, sequential = %v", it, ms, total, got, want)
			}
			if got[i] > ms[i].Capacity {
				t.Fatalf("#%d: member %s over capacity", it, ms[i].Name)
			}
		}
		if sum(got) != total {
			t.Fatalf("#%d: sum %d, want %d", it, sum(got), total)
		}
	}
}

func TestPropertyApportionIgnoresMemberOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for it := range iterations {
		ms := randomMembers(r)
		total := int64(r.IntN(150))
		want, err := Apportion(total, ms)
		if err != nil {
			continue
		}
		byName := map[string]int64{}
		for i := range ms {
			byName[ms[i].Name] = want[i]
		}
		shuffled := append([]Member(nil), ms...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got, err := Apportion(total, shuffled)
		if err != nil {
			t.Fatalf("#%d: shuffled input failed: %v", it, err)
		}
		for i := range shuffled {
			if got[i] != byName[shuffled[i].Name] {
				t.Fatalf("#%d: member %s got %d shuffled, %d in order", it, shuffled[i].Name, got[i], byName[shuffled[i].Name])
			}
		}
	}
}

func TestPropertyScaleUpThenDownMovesOneReplicaPerStepAndReturns(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for it := range iterations {
		ms := randomMembers(r)
		n := int64(r.IntN(100))
		start, err := Apportion(n, ms)
		if err != nil {
			continue
		}
		withHeld := func(held []int64) []Member {
			out := append([]Member(nil), ms...)
			for i := range out {
				out[i].Current = held[i]
			}
			return out
		}
		up, err := Adjust(n+1, withHeld(start))
		if err != nil {
			continue // no room for one more
		}
		down, err := Adjust(n, withHeld(up))
		if err != nil {
			t.Fatalf("#%d: scale-down failed: %v", it, err)
		}
		if moved(start, up) != 1 || moved(up, down) != 1 {
			t.Fatalf("#%d %v: %v -> %v -> %v moves more than one replica per step", it, ms, start, up, down)
		}
		// House monotonicity: the least-movement path lands on the fresh division.
		fresh, _ := Apportion(n+1, ms)
		if moved(up, fresh) != 0 || moved(down, start) != 0 {
			t.Fatalf("#%d %v: N->N+1 gave %v (fresh %v), back gave %v (start %v)", it, ms, up, fresh, down, start)
		}
	}
}

func TestPropertyAdjustOnlyAddsOnScaleUpAndOnlyRemovesOnScaleDown(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for it := range iterations {
		ms := randomMembers(r)
		for i := range ms {
			ms[i].Current = int64(r.IntN(20))
		}
		total := int64(r.IntN(150))
		got, err := Adjust(total, ms)
		if err != nil {
			continue
		}
		var held int64
		for i := range ms {
			held += min(ms[i].Current, ms[i].Capacity)
		}
		if sum(got) != total {
			t.Fatalf("#%d: sum %d, want %d", it, sum(got), total)
		}
		for i := range ms {
			kept := min(ms[i].Current, ms[i].Capacity)
			if got[i] > ms[i].Capacity {
				t.Fatalf("#%d: %s over capacity", it, ms[i].Name)
			}
			if total >= held && got[i] < kept {
				t.Fatalf("#%d: scale-up took replicas from %s (%d -> %d)", it, ms[i].Name, kept, got[i])
			}
			if total <= held && got[i] > kept {
				t.Fatalf("#%d: scale-down added replicas to %s (%d -> %d)", it, ms[i].Name, kept, got[i])
			}
		}
	}
}

func TestPropertyAggregateSumsAndRespectsCapacity(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for it := range iterations {
		ms := randomMembers(r)
		for i := range ms {
			if ms[i].Capacity == Unlimited {
				ms[i].Capacity = int64(r.IntN(60))
			}
			if r.IntN(4) == 0 {
				ms[i].Current = min(int64(r.IntN(10)), ms[i].Capacity)
			}
		}
		total := int64(r.IntN(200))
		got, err := Aggregate(total, ms, r.IntN(2))
		if err != nil {
			var short *InsufficientCapacityError
			if !errors.As(err, &short) {
				t.Fatalf("#%d: unexpected error %v", it, err)
			}
			var room int64
			for i := range ms {
				room += ms[i].Capacity
			}
			if room >= total {
				t.Fatalf("#%d: refused %d although members hold %d", it, total, room)
			}
			continue
		}
		if sum(got) != total {
			t.Fatalf("#%d: sum %d, want %d", it, sum(got), total)
		}
		for i := range ms {
			if got[i] > ms[i].Capacity {
				t.Fatalf("#%d: %s over capacity", it, ms[i].Name)
			}
		}
	}
}
