package spread

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// pickMembers picks up to the cluster constraint's maxGroups of alive, first
// covering every group constraint's minGroups, and checks the result.
func pickMembers(r Request, member *Constraint, grouped []int, alive []int) ([]int, int, error) {
	minMembers, take := 0, len(alive)
	if member != nil {
		minMembers = member.MinGroups
		if len(alive) < minMembers {
			return nil, 0, &Failure{Constraint: member.Name, Message: fmt.Sprintf(
				"spread constraint %s: minGroups %d, but only %d member(s) available",
				member.Name, minMembers, len(alive))}
		}
		if member.MaxGroups > 0 && member.MaxGroups < take {
			take = member.MaxGroups
		}
	}
	picks, covering, err := coverThenRank(r, grouped, alive, take, member)
	if err != nil {
		return nil, 0, err
	}
	if r.Need > 0 && take < len(alive) && capacityOf(r, picks) < r.Need {
		bySize := slices.Clone(alive)
		slices.SortFunc(bySize, func(a, b int) int {
			if c := cmp.Compare(r.Candidates[b].Capacity, r.Candidates[a].Capacity); c != 0 {
				return c
			}
			return strings.Compare(r.Candidates[a].Name, r.Candidates[b].Name)
		})
		picks, covering, err = coverThenRank(r, grouped, bySize, take, member)
		if err != nil {
			return nil, 0, err
		}
		if have := capacityOf(r, picks); have < r.Need {
			return nil, 0, &Failure{Insufficient: true, Constraint: member.Name, Message: fmt.Sprintf(
				"spread constraint %s: the %d largest member(s) allowed by maxGroups hold %d of %d replicas",
				member.Name, take, have, r.Need)}
		}
	}
	return picks, min(max(covering, minMembers), len(picks)), nil
}

// coverThenRank picks take candidates from order: first, greedily, those that
// add a group to the most constraints still below minGroups; then the rest in
// order. It reports how many picks were needed for coverage.
func coverThenRank(r Request, grouped []int, order []int, take int, member *Constraint) ([]int, int, error) {
	covered := make([]map[string]bool, len(grouped))
	for i := range covered {
		covered[i] = map[string]bool{}
	}
	short := func(i int) bool { return len(covered[i]) < r.Constraints[grouped[i]].MinGroups }
	gain := func(c int) int {
		n := 0
		for i, k := range grouped {
			if v, _ := r.GroupOf(c, k); short(i) && !covered[i][v] {
				n++
			}
		}
		return n
	}
	picked := make([]bool, len(r.Candidates))
	picks := make([]int, 0, take)
	pick := func(c int) {
		picked[c] = true
		picks = append(picks, c)
		for i, k := range grouped {
			v, _ := r.GroupOf(c, k)
			covered[i][v] = true
		}
	}
	for len(picks) < take {
		best, bestGain := -1, 0
		for _, c := range order {
			if g := gain(c); !picked[c] && g > bestGain {
				best, bestGain = c, g
			}
		}
		if best < 0 {
			break
		}
		pick(best)
	}
	covering := len(picks)
	for i := range grouped {
		if short(i) {
			c := &r.Constraints[grouped[i]]
			return nil, 0, &Failure{Constraint: c.Name, Message: fmt.Sprintf(
				"spread constraint %s: minGroups %d cannot be met by %d member(s) (cluster maxGroups %d)",
				c.Name, c.MinGroups, take, maxGroupsOf(member))}
		}
	}
	for _, c := range order {
		if len(picks) == take {
			break
		}
		if !picked[c] {
			pick(c)
		}
	}
	return picks, covering, nil
}

func maxGroupsOf(c *Constraint) int {
	if c == nil {
		return 0
	}
	return c.MaxGroups
}
