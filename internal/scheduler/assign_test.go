package scheduler_test

import (
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// cpus is a member with one node of n CPU: it holds n replicas of 1 CPU.
func cpus(name string, n string, opts ...st.Option) clusterv1alpha1.MemberCluster {
	return st.Member(name, append([]st.Option{st.Nodes(1, "cpu", n)}, opts...)...)
}

func TestReplicaAssignmentStatedResults(t *testing.T) {
	unknown := func(names ...string) []clusterv1alpha1.MemberCluster {
		var ms []clusterv1alpha1.MemberCluster
		for _, n := range names {
			ms = append(ms, st.Member(n))
		}
		return ms
	}
	tests := []struct {
		name      string
		members   []clusterv1alpha1.MemberCluster
		replicas  int32
		placement *policyv1alpha1.Placement
		current   []workv1alpha1.TargetCluster
		rebalance bool
		want      string
	}{
		{"Duplicated: every member gets all replicas", unknown("a", "b", "c"), 3, duplicated(), nil, false, "a:3 b:3 c:3"},
		{"no replicaScheduling means Duplicated", unknown("a", "b"), 2, &policyv1alpha1.Placement{}, nil, false, "a:2 b:2"},
		{"static weights 2:1 with 2 replicas give 1:1 (Webster)", unknown("a", "b"), 2, staticWeights("a", 2, "b", 1), nil, false, "a:1 b:1"},
		{"static weights 2:1 with 3 replicas give 2:1", unknown("a", "b"), 3, staticWeights("a", 2, "b", 1), nil, false, "a:2 b:1"},
		{"equal weights: 7 replicas at 1:1:1 give 3:2:2, ties by name", unknown("c", "b", "a"), 7, equalWeights(), nil, false, "a:3 b:2 c:2"},
		{"a member takes the highest weight among the entries selecting it", unknown("a", "b"), 4, divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			&policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a", "b"}}, Weight: 1},
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"a"}}, Weight: 3},
			}}), nil, false, "a:3 b:1"},
		{"members no entry selects get nothing", unknown("a", "b", "c"), 4, staticWeights("a", 1, "b", 1), nil, false, "a:2 b:2"},
		{"static weights never exceed known capacity", []clusterv1alpha1.MemberCluster{cpus("a", "2"), cpus("b", "100")}, 10, equalWeights(), nil, false, "a:2 b:8"},
		{"dynamic weight divides by available replicas 10:30", []clusterv1alpha1.MemberCluster{cpus("a", "10"), cpus("b", "30")}, 8, dynamicWeights(), nil, false, "a:2 b:6"},
		{"Aggregated uses the largest member that holds all", []clusterv1alpha1.MemberCluster{cpus("a", "10"), cpus("b", "30"), cpus("c", "20")}, 25, aggregated(), nil, false, "b:25"},
		{"Aggregated adds the next largest when needed, dividing 30:20", []clusterv1alpha1.MemberCluster{cpus("a", "10"), cpus("b", "30"), cpus("c", "20")}, 45, aggregated(), nil, false, "b:27 c:18"},
		{"zero replicas go to every selected member", unknown("a", "b"), 0, equalWeights(), nil, false, "a:0 b:0"},

		// Least movement.
		{"scale-up adds only the new replicas", unknown("a", "b", "c"), 8, equalWeights(), current("a", 3, "b", 2, "c", 2), false, "a:3 b:3 c:2"},
		{"scale-up keeps an uneven placement and adds where it is short", unknown("a", "b"), 7, equalWeights(), current("a", 5, "b", 0), false, "a:5 b:2"},
		{"scale-down removes from the current placement by weight", unknown("a", "b"), 7, equalWeights(), current("a", 5, "b", 5), false, "a:4 b:3"},
		{"a new member does not take replicas without a scale-up", unknown("a", "b", "c"), 4, equalWeights(), current("a", 2, "b", 2), false, "a:2 b:2"},
		{"rebalance divides from scratch", unknown("a", "b", "c"), 4, equalWeights(), current("a", 2, "b", 2), true, "a:2 b:1 c:1"},
		{"replicas of a member no longer feasible are redistributed, others keep theirs", []clusterv1alpha1.MemberCluster{
			st.Member("a"), st.Member("b", st.Deleting()), st.Member("c")}, 6, equalWeights(), current("a", 2, "b", 2, "c", 2), false, "a:3 c:3"},
		{"the binding's own replicas count as room on their member, and no more than fits is added", []clusterv1alpha1.MemberCluster{cpus("a", "1"), cpus("b", "20")}, 14, equalWeights(), current("a", 5, "b", 5), false, "a:6 b:8"},
		{"Aggregated scale-up stays on the member already used", []clusterv1alpha1.MemberCluster{cpus("a", "10"), cpus("b", "30"), cpus("c", "20")}, 10, aggregated(), current("c", 5), false, "c:10"},
		{"dynamic weight scale-up counts the binding's own replicas as its room", []clusterv1alpha1.MemberCluster{cpus("a", "0"), cpus("b", "4")}, 6, dynamicWeights(), current("a", 4), false, "a:4 b:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := deployment(tt.replicas, tt.placement)
			in.Current, in.Rebalance = tt.current, tt.rebalance
			res := mustSchedule(t, st.Snapshot(t, tt.members...), in)
			if got := placed(res.Clusters); got != tt.want {
				t.Errorf("placement = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDividedWithoutEnoughCapacityIsUnschedulableWithEachMembersCapacity(t *testing.T) {
	snap := st.Snapshot(t, cpus("a", "20"), cpus("b", "30"), cpus("c", "10"))
	_, err := scheduler.New().Schedule(snap, deployment(100, dynamicWeights()))
	want := "Unschedulable: insufficient capacity for 100 replicas: members hold 60 (b: 30, a: 20, c: 10)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestInvalidPlacementIsASchedulerError(t *testing.T) {
	snap := st.Snapshot(t, st.Member("a"))
	p := divided("Scattered", nil)
	_, err := scheduler.New().Schedule(snap, deployment(1, p))
	if scheduler.ReasonOf(err) != "SchedulerError" {
		t.Fatalf("err = %v, want a SchedulerError", err)
	}
}
