package spread

import (
	"errors"
	"slices"
	"testing"
)

// cand is a candidate with its groups by constraint name.
type cand struct {
	name     string
	score    int64
	capacity int64
	groups   map[string]string // constraint name -> value; absent = no group
}

func request(cands []cand, need int64, constraints ...Constraint) Request {
	r := Request{Constraints: constraints, Need: need}
	for _, c := range cands {
		r.Candidates = append(r.Candidates, Candidate{Name: c.name, Score: c.score, Capacity: c.capacity})
	}
	r.GroupOf = func(i, k int) (string, bool) {
		v, ok := cands[i].groups[constraints[k].Name]
		return v, ok
	}
	return r
}

func names(r Request, idx []int) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		out[i] = r.Candidates[c].Name
	}
	return out
}

func region(v string) map[string]string { return map[string]string{"region": v} }

var (
	byCluster = func(min, max int) Constraint {
		return Constraint{Name: "spreadByField=cluster", ByMember: true, MinGroups: min, MaxGroups: max}
	}
	byRegion = func(min, max int) Constraint { return Constraint{Name: "region", MinGroups: min, MaxGroups: max} }
	byRack   = func(min, max int) Constraint { return Constraint{Name: "rack", MinGroups: min, MaxGroups: max} }
)

func TestSelectPicksGroupsThenMembers(t *testing.T) {
	fleet := []cand{
		{"a", 100, 10, region("r0")},
		{"b", 90, 10, region("r0")},
		{"c", 50, 10, region("r1")},
		{"d", 10, 10, region("r2")},
	}
	tests := []struct {
		name          string
		req           Request
		want          []string
		wantMandatory int
	}{
		{"no constraints: every candidate in the given order", request([]cand{fleet[3], fleet[0]}, 0), []string{"d", "a"}, 0},
		{"ranked by score, then capacity, then given (name) order", request([]cand{{"x", 1, 5, nil}, {"y", 1, 9, nil}, {"z", 1, 5, nil}, {"w", 2, 1, nil}}, 0, byCluster(0, 0)), []string{"w", "y", "x", "z"}, 0},
		{"cluster maxGroups keeps the best members", request(fleet, 0, byCluster(1, 2)), []string{"a", "b"}, 1},
		{"region maxGroups 2 keeps the two best regions", request(fleet, 0, byRegion(1, 2), byCluster(1, 0)), []string{"a", "b", "c"}, 1},
		{"region minGroups 2 with cluster maxGroups 2 covers both regions first", request(fleet, 0, byRegion(2, 2), byCluster(1, 2)), []string{"a", "c"}, 2},
		{"region minGroups 3 under cluster maxGroups 3 covers three regions", request(fleet, 0, byRegion(3, 3), byCluster(0, 3)), []string{"a", "c", "d"}, 3},
		{"the best groups too small for the replicas: the largest instead", request([]cand{
			{"a", 100, 30, region("r0")},
			{"b", 10, 40, region("r1")},
			{"c", 10, 30, region("r1")},
		}, 50, byRegion(1, 1), byCluster(1, 0)), []string{"b", "c"}, 1},
		{"the best members too small for the replicas: the largest instead", request([]cand{
			{"a", 100, 10, nil},
			{"b", 10, 60, nil},
		}, 50, byCluster(1, 1)), []string{"b"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(tt.req)
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			if got := names(tt.req, sel.Members); !slices.Equal(got, tt.want) {
				t.Errorf("members = %v, want %v", got, tt.want)
			}
			if sel.Mandatory != tt.wantMandatory {
				t.Errorf("mandatory = %d, want %d", sel.Mandatory, tt.wantMandatory)
			}
		})
	}
}

func TestSelectByLabelExcludesMembersWithoutTheLabel(t *testing.T) {
	req := request([]cand{
		{"a", 0, 1, map[string]string{"rack": "r1"}},
		{"b", 0, 1, nil},
		{"c", 0, 1, map[string]string{"rack": "r2"}},
	}, 0, byRack(2, 0))
	sel, err := Select(req)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	if got := names(req, sel.Members); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("members = %v, want [a c]", got)
	}
	if len(sel.Excluded) != 1 || req.Candidates[sel.Excluded[0].Candidate].Name != "b" ||
		sel.Excluded[0].Reason != "no group for spread constraint rack" {
		t.Errorf("excluded = %+v, want b with reason %q", sel.Excluded, "no group for spread constraint rack")
	}
}

func TestSelectFailsNamingTheConstraint(t *testing.T) {
	twoRacks := []cand{
		{"a", 0, 10, map[string]string{"rack": "r1"}},
		{"b", 0, 10, map[string]string{"rack": "r2"}},
		{"c", 0, 10, nil},
	}
	tests := []struct {
		name             string
		req              Request
		wantInsufficient bool
		wantMessage      string
	}{
		{"label minGroups beyond the groups there are", request(twoRacks, 0, byRack(3, 0)), false,
			"spread constraint rack: minGroups 3, but only 2 group(s) available (r1, r2)"},
		{"cluster minGroups beyond the members there are", request(twoRacks, 0, byCluster(4, 0)), false,
			"spread constraint spreadByField=cluster: minGroups 4, but only 3 member(s) available"},
		{"group minGroups that cluster maxGroups cannot cover", request(twoRacks, 0, byRack(2, 0), byCluster(1, 1)), false,
			"spread constraint rack: minGroups 2 cannot be met by 1 member(s) (cluster maxGroups 1)"},
		{"maxGroups too few to hold the replicas", request(twoRacks, 15, byRack(1, 1)), true,
			"spread constraint rack: the 1 largest group(s) allowed by maxGroups hold 10 of 15 replicas"},
		{"cluster maxGroups too few to hold the replicas", request(twoRacks, 25, byCluster(1, 2)), true,
			"spread constraint spreadByField=cluster: the 2 largest member(s) allowed by maxGroups hold 20 of 25 replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Select(tt.req)
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("err = %v, want a *Failure", err)
			}
			if f.Insufficient != tt.wantInsufficient || f.Message != tt.wantMessage {
				t.Errorf("failure = {insufficient %v, %q}, want {insufficient %v, %q}", f.Insufficient, f.Message, tt.wantInsufficient, tt.wantMessage)
			}
		})
	}
}
