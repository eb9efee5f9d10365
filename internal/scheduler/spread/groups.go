package spread

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// group is the candidates sharing one value of a constraint.
type group struct {
	value    string
	best     int // position of its best candidate in the ranking
	capacity int64
	members  []int
}

// keepGroups applies group constraint k to alive (ranked) and returns the
// candidates of the groups it keeps, still ranked.
func keepGroups(r Request, k int, alive []int) ([]int, error) {
	c := &r.Constraints[k]
	groups := groupsOf(r, k, alive)
	if len(groups) < c.MinGroups {
		return nil, &Failure{Constraint: c.Name, Message: fmt.Sprintf(
			"spread constraint %s: minGroups %d, but only %d group(s) available%s",
			c.Name, c.MinGroups, len(groups), listValues(groups))}
	}
	take := len(groups)
	if c.MaxGroups > 0 && c.MaxGroups < take {
		take = c.MaxGroups
	}
	slices.SortFunc(groups, byRank)
	kept := groups[:take]
	if r.Need > 0 && take < len(groups) && groupsCapacity(kept) < r.Need {
		// The best-ranked groups are too small: the largest ones may do.
		bySize := slices.Clone(groups)
		slices.SortFunc(bySize, byCapacity)
		kept = bySize[:take]
		if have := groupsCapacity(kept); have < r.Need {
			return nil, &Failure{Insufficient: true, Constraint: c.Name, Message: fmt.Sprintf(
				"spread constraint %s: the %d largest group(s) allowed by maxGroups hold %d of %d replicas",
				c.Name, take, have, r.Need)}
		}
	}
	keep := map[string]bool{}
	for _, g := range kept {
		keep[g.value] = true
	}
	out := make([]int, 0, len(alive))
	for _, m := range alive {
		if v, _ := r.GroupOf(m, k); keep[v] {
			out = append(out, m)
		}
	}
	return out, nil
}

func groupsOf(r Request, k int, alive []int) []*group {
	byValue := map[string]*group{}
	var groups []*group
	for pos, m := range alive {
		v, _ := r.GroupOf(m, k)
		g := byValue[v]
		if g == nil {
			g = &group{value: v, best: pos}
			byValue[v] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, m)
		g.capacity = satAdd(g.capacity, r.Candidates[m].Capacity)
	}
	return groups
}

func byRank(a, b *group) int {
	if c := cmp.Compare(a.best, b.best); c != 0 {
		return c
	}
	if c := cmp.Compare(b.capacity, a.capacity); c != 0 {
		return c
	}
	return strings.Compare(a.value, b.value)
}

func byCapacity(a, b *group) int {
	if c := cmp.Compare(b.capacity, a.capacity); c != 0 {
		return c
	}
	return strings.Compare(a.value, b.value)
}

func groupsCapacity(gs []*group) int64 {
	var sum int64
	for _, g := range gs {
		sum = satAdd(sum, g.capacity)
	}
	return sum
}

func listValues(gs []*group) string {
	if len(gs) == 0 {
		return ""
	}
	values := make([]string, len(gs))
	for i, g := range gs {
		values[i] = g.value
	}
	slices.Sort(values)
	return " (" + strings.Join(values, ", ") + ")"
}

func satAdd(a, b int64) int64 {
	if a > Unlimited-b {
		return Unlimited
	}
	return a + b
}
