package scheduler_test

import (
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// A placement that gives less than its policy asks says which members it is
// short of and why; one that gives everything asked says nothing.
func TestAShortPlacementNamesTheMembersLeftOutForCapacity(t *testing.T) {
	names := func(p *policyv1alpha1.Placement, n ...string) *policyv1alpha1.Placement {
		return with(p, func(p *policyv1alpha1.Placement) {
			p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: n}
		})
	}
	spreadMax := func(p *policyv1alpha1.Placement, max int) *policyv1alpha1.Placement {
		return with(p, func(p *policyv1alpha1.Placement) {
			p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MaxGroups: max, MinGroups: 1}}
		})
	}
	tests := []struct {
		name      string
		placement *policyv1alpha1.Placement
		replicas  int32
		wantPlace string
		wantShort string
	}{
		{name: "Duplicated, every named member has room", placement: names(duplicated(), "a", "b", "c"), replicas: 1,
			wantPlace: "a:1 b:1 c:1"},
		{name: "Duplicated, one named member too full", placement: names(duplicated(), "a", "b", "c"), replicas: 2,
			wantPlace: "a:2 b:2", wantShort: "short of c (insufficient capacity: 1 of 2 replicas fit)"},
		{name: "Duplicated, the full member is not named", placement: names(duplicated(), "a", "b"), replicas: 2,
			wantPlace: "a:2 b:2"},
		{name: "Duplicated, two of three too full", placement: names(duplicated(), "a", "b", "c"), replicas: 3,
			wantPlace: "a:3", wantShort: "short of b (insufficient capacity: 2 of 3 replicas fit), c (insufficient capacity: 1 of 3 replicas fit)"},
		{name: "Duplicated, a spread maximum reached leaves nothing short", placement: spreadMax(names(duplicated(), "a", "b", "c"), 2), replicas: 2,
			wantPlace: "a:2 b:2"},
		{name: "Duplicated, a spread maximum not reached", placement: spreadMax(names(duplicated(), "a", "b", "c"), 3), replicas: 2,
			wantPlace: "a:2 b:2", wantShort: "short of c (insufficient capacity: 1 of 2 replicas fit)"},
		{name: "Divided within the fleet's room is never short", placement: names(equalWeights(), "a", "b", "c"), replicas: 5,
			wantPlace: "a:2 b:2 c:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := st.Snapshot(t,
				st.Member("a", st.Nodes(1, "cpu", "8")), st.Member("b", st.Nodes(1, "cpu", "2")), st.Member("c", st.Nodes(1, "cpu", "1")))
			res := mustSchedule(t, snap, deployment(tt.replicas, tt.placement))
			if got := placed(res.Clusters); got != tt.wantPlace {
				t.Errorf("placed %q, want %q", got, tt.wantPlace)
			}
			if got := scheduler.ShortMessage(res.Short); got != tt.wantShort {
				t.Errorf("short %q, want %q", got, tt.wantShort)
			}
		})
	}
}

// A long list of short members names ten and counts the rest.
func TestShortMessageNamesTenMembers(t *testing.T) {
	var short []scheduler.ShortMember
	for _, n := range []string{"m00", "m01", "m02", "m03", "m04", "m05", "m06", "m07", "m08", "m09", "m10", "m11"} {
		short = append(short, scheduler.ShortMember{Name: n, Reason: "r"})
	}
	want := "short of m00 (r), m01 (r), m02 (r), m03 (r), m04 (r), m05 (r), m06 (r), m07 (r), m08 (r), m09 (r), 2 more"
	if got := scheduler.ShortMessage(short); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
