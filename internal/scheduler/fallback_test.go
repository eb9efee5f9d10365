package scheduler_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func terms(p *policyv1alpha1.Placement, regions ...string) *policyv1alpha1.Placement {
	return with(p, func(p *policyv1alpha1.Placement) {
		for _, r := range regions {
			p.ClusterAffinities = append(p.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{
				AffinityName:    "in-" + r,
				ClusterAffinity: regionSelector(corev1.NodeSelectorOpIn, r),
			})
		}
	})
}

func TestAffinityTermWithoutRoomFallsBackToTheNextTerm(t *testing.T) {
	snap := st.Snapshot(t,
		cpus("east-1", "4", st.Region("east")), cpus("east-2", "4", st.Region("east")),
		cpus("west-1", "10", st.Region("west")), cpus("west-2", "10", st.Region("west")),
	)
	res := mustSchedule(t, snap, deployment(10, terms(equalWeights(), "east", "west")))
	if got, want := placed(res.Clusters), "west-1:5 west-2:5"; got != want {
		t.Errorf("placement = %q, want %q", got, want)
	}
	if res.AffinityName != "in-west" {
		t.Errorf("affinity in force = %q, want in-west", res.AffinityName)
	}
	want := []scheduler.TermOutcome{
		{Name: "in-east", Reason: "Unschedulable", Message: "insufficient capacity for 10 replicas: members hold 8 (east-1: 4, east-2: 4)"},
		{Name: "in-west", Reason: "Success"},
	}
	if got := res.Explanation.Terms; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("terms = %+v, want %+v", got, want)
	}
}

func TestAffinityTermWithRoomIsKept(t *testing.T) {
	snap := st.Snapshot(t, cpus("east-1", "40", st.Region("east")), cpus("west-1", "40", st.Region("west")))
	res := mustSchedule(t, snap, deployment(10, terms(equalWeights(), "east", "west")))
	if got := placed(res.Clusters); got != "east-1:10" || res.AffinityName != "in-east" {
		t.Errorf("placement %q under %q, want east-1:10 under in-east", got, res.AffinityName)
	}
}

func TestDuplicatedFallsBackOnlyWhenATermHasNoMember(t *testing.T) {
	snap := st.Snapshot(t, st.Member("east-1", st.Region("east"), st.NotReady("Unreachable")), st.Member("west-1", st.Region("west")))
	res := mustSchedule(t, snap, deployment(3, terms(duplicated(), "east", "west")))
	if got := placed(res.Clusters); got != "west-1:3" || res.AffinityName != "in-west" {
		t.Errorf("placement %q under %q, want west-1:3 under in-west", got, res.AffinityName)
	}
}

func TestFallbackResumesFromTheTermInForceUnlessRebalancing(t *testing.T) {
	snap := st.Snapshot(t, cpus("east-1", "40", st.Region("east")), cpus("west-1", "40", st.Region("west")))
	in := deployment(4, terms(equalWeights(), "east", "west"))
	in.ObservedAffinityName, in.Current = "in-west", current("west-1", 4)

	res := mustSchedule(t, snap, in)
	if got := placed(res.Clusters); got != "west-1:4" || res.AffinityName != "in-west" {
		t.Errorf("placement %q under %q, want west-1:4 under in-west (no flapping back on every reschedule)", got, res.AffinityName)
	}
	in.Rebalance = true
	res = mustSchedule(t, snap, in)
	if got := placed(res.Clusters); got != "east-1:4" || res.AffinityName != "in-east" {
		t.Errorf("rebalanced placement %q under %q, want east-1:4 under in-east", got, res.AffinityName)
	}
}

func TestEveryTermFailingReportsEachTerm(t *testing.T) {
	snap := st.Snapshot(t, cpus("east-1", "1", st.Region("east")), cpus("west-1", "1", st.Region("west")))
	_, err := scheduler.New().Schedule(snap, deployment(5, terms(equalWeights(), "east", "west")))
	want := `Unschedulable: affinity "in-east": insufficient capacity for 5 replicas: members hold 1 (east-1: 1); ` +
		`affinity "in-west": insufficient capacity for 5 replicas: members hold 1 (west-1: 1)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}
