package division

import "math/bits"

// Apportion divides total between members from scratch, ignoring Current:
// the total seats of highest priority, within each member's capacity.
func Apportion(total int64, members []Member) ([]int64, error) {
	if err := validate(total, members); err != nil {
		return nil, err
	}
	seats := quotaFloors(total, members)
	b := newBook(members, seats)
	var given int64
	for _, s := range seats {
		given += s
	}
	if !b.add(total - given) {
		return nil, &InsufficientCapacityError{Want: total, Have: capacityOf(members)}
	}
	// Starting from the floors of the exact quotas makes large divisions
	// cheap; settling makes the result exactly the top seats even where
	// Webster gives a member less than the floor of its quota.
	b.settle()
	return seats, nil
}

// quotaFloors is floor(total*w/W) per member, capped by capacity: a start
// that never exceeds total.
func quotaFloors(total int64, members []Member) []int64 {
	seats := make([]int64, len(members))
	var weights uint64
	for i := range members {
		if members[i].Weight > 0 {
			weights += uint64(members[i].Weight)
			if weights > uint64(Unlimited) {
				// Too large to divide exactly; starting from zero is always right.
				return seats
			}
		}
	}
	if weights == 0 {
		return seats
	}
	for i := range members {
		if members[i].Weight <= 0 {
			continue
		}
		hi, lo := bits.Mul64(uint64(total), uint64(members[i].Weight))
		q, _ := bits.Div64(hi, lo, weights)
		seats[i] = min(int64(q), members[i].Capacity)
	}
	return seats
}

func capacityOf(members []Member) int64 {
	var sum int64
	for i := range members {
		if members[i].Weight <= 0 {
			continue
		}
		c := members[i].Capacity
		if sum > Unlimited-c {
			return Unlimited
		}
		sum += c
	}
	return sum
}
