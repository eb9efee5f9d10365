package division

// Adjust divides total starting from each member's Current, moving as few
// replicas as possible: it only adds the best seats not yet held (scale-up)
// or removes the worst seats held (scale-down). A member holding more than
// its capacity first drops the excess, which is then added elsewhere.
func Adjust(total int64, members []Member) ([]int64, error) {
	if err := validate(total, members); err != nil {
		return nil, err
	}
	seats := make([]int64, len(members))
	var held int64
	for i := range members {
		seats[i] = min(members[i].Current, members[i].Capacity)
		held += seats[i]
	}
	b := newBook(members, seats)
	switch {
	case held < total:
		if !b.add(total - held) {
			return nil, &InsufficientCapacityError{Want: total, Have: totalRoom(members)}
		}
	case held > total:
		b.remove(held - total)
	}
	return seats, nil
}
