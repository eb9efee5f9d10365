package division

import (
	"fmt"
	"math"
)

// Unlimited is the capacity of a member whose capacity is unknown.
const Unlimited int64 = math.MaxInt64

// Member is one member as division sees it.
type Member struct {
	// Name breaks ties between equal priorities; names must be unique.
	Name string
	// Weight is the member's share. A member of weight 0 takes no new
	// replicas but may keep those it holds (they are the first removed).
	Weight int64
	// Capacity is the most replicas the member may hold; Unlimited if unknown.
	Capacity int64
	// Current is the replicas the member holds before this decision.
	Current int64
}

// InsufficientCapacityError says the members together cannot hold the
// replicas asked for.
type InsufficientCapacityError struct {
	Want int64
	Have int64
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %d replicas asked, members can hold %d", e.Want, e.Have)
}

// room is how many replicas a member may hold in an Adjust: a weightless
// member only keeps what it has.
func (m *Member) room() int64 {
	if m.Weight > 0 {
		return max(m.Capacity, 0)
	}
	return min(max(m.Current, 0), max(m.Capacity, 0))
}

func totalRoom(members []Member) int64 {
	var sum int64
	for i := range members {
		r := members[i].room()
		if sum > Unlimited-r {
			return Unlimited
		}
		sum += r
	}
	return sum
}

func validate(total int64, members []Member) error {
	if total < 0 {
		return fmt.Errorf("replicas must not be negative, got %d", total)
	}
	for i := range members {
		if members[i].Weight < 0 || members[i].Capacity < 0 || members[i].Current < 0 {
			return fmt.Errorf("member %s: weight, capacity and current must not be negative", members[i].Name)
		}
	}
	return nil
}
