package spread

import (
	"cmp"
	"fmt"
	"slices"
)

// Unlimited is the capacity of a candidate whose capacity is unknown.
const Unlimited int64 = 1<<63 - 1

// Constraint is one spread constraint.
type Constraint struct {
	// Name identifies the constraint in reasons, e.g. "spreadByField=region".
	Name string
	// ByMember is the cluster constraint: each member is its own group.
	ByMember  bool
	MinGroups int
	MaxGroups int // 0: no limit
}

// Candidate is a member that passed the filters. Callers give candidates in
// name order: equal candidates keep that order, which spares comparing names.
type Candidate struct {
	Name     string
	Score    int64
	Capacity int64 // replicas it can hold; Unlimited when unknown
}

// Request is what Select needs.
type Request struct {
	Candidates  []Candidate
	Constraints []Constraint
	// GroupOf is candidate's group value for constraint, and whether it has one.
	// It is not called for ByMember constraints.
	GroupOf func(candidate, constraint int) (string, bool)
	// Need is the replicas the selection must hold together (Divided); 0 when
	// capacity does not decide the selection (Duplicated).
	Need int64
}

// Selection is the chosen candidates.
type Selection struct {
	// Members are candidate indexes in pick order.
	Members []int
	// Mandatory is how many of the first Members the constraints' minGroups need.
	Mandatory int
	// Excluded are candidates left out because they have no group for a constraint.
	Excluded []Exclusion
}

// Exclusion is a candidate left out, and why.
type Exclusion struct {
	Candidate int
	Reason    string
}

// Failure says why no selection satisfies the constraints.
type Failure struct {
	// Insufficient: groups exist but the ones allowed cannot hold Need.
	// Otherwise there are too few groups (NoClusterFit).
	Insufficient bool
	Constraint   string
	Message      string
}

func (f *Failure) Error() string { return f.Message }

// Select chooses candidates under r.Constraints; the error is a *Failure.
func Select(r Request) (Selection, error) {
	var sel Selection
	if len(r.Constraints) == 0 {
		// Nothing to choose between: every candidate, in the given order.
		sel.Members = make([]int, len(r.Candidates))
		for i := range sel.Members {
			sel.Members[i] = i
		}
		return sel, nil
	}
	ranked := rank(r.Candidates)

	alive := ranked[:0:0]
	for _, c := range ranked {
		if reason, ok := missingGroup(r, c); ok {
			sel.Excluded = append(sel.Excluded, Exclusion{Candidate: c, Reason: reason})
			continue
		}
		alive = append(alive, c)
	}

	var member *Constraint
	var grouped []int // indexes of group constraints
	for k := range r.Constraints {
		if r.Constraints[k].ByMember {
			member = &r.Constraints[k]
			continue
		}
		grouped = append(grouped, k)
	}
	// On failure the exclusions are still returned: they explain it.
	for _, k := range grouped {
		var err error
		if alive, err = keepGroups(r, k, alive); err != nil {
			return Selection{Excluded: sel.Excluded}, err
		}
	}

	picks, mandatory, err := pickMembers(r, member, grouped, alive)
	if err != nil {
		return Selection{Excluded: sel.Excluded}, err
	}
	sel.Members, sel.Mandatory = picks, mandatory
	return sel, nil
}

// rank orders candidate indexes by score, capacity (both high first), then
// given (name) order.
func rank(cands []Candidate) []int {
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ca, cb := &cands[a], &cands[b]
		if c := cmp.Compare(cb.Score, ca.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(cb.Capacity, ca.Capacity); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return idx
}

func missingGroup(r Request, c int) (string, bool) {
	for k := range r.Constraints {
		if r.Constraints[k].ByMember {
			continue
		}
		if _, ok := r.GroupOf(c, k); !ok {
			return fmt.Sprintf("no group for spread constraint %s", r.Constraints[k].Name), true
		}
	}
	return "", false
}

func capacityOf(r Request, members []int) int64 {
	var sum int64
	for _, c := range members {
		cp := r.Candidates[c].Capacity
		if sum > Unlimited-cp {
			return Unlimited
		}
		sum += cp
	}
	return sum
}
