package scheduler_test

import (
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

const rack = "topology.flotilla.io/rack"

func spreading(p *policyv1alpha1.Placement, constraints ...policyv1alpha1.SpreadConstraint) *policyv1alpha1.Placement {
	return with(p, func(p *policyv1alpha1.Placement) { p.SpreadConstraints = constraints })
}

func byLabel(label string, minGroups, maxGroups int) policyv1alpha1.SpreadConstraint {
	return policyv1alpha1.SpreadConstraint{SpreadByLabel: label, MinGroups: minGroups, MaxGroups: maxGroups}
}

func byField(field policyv1alpha1.SpreadFieldValue, minGroups, maxGroups int) policyv1alpha1.SpreadConstraint {
	return policyv1alpha1.SpreadConstraint{SpreadByField: field, MinGroups: minGroups, MaxGroups: maxGroups}
}

func TestSpreadByLabelWithTooFewGroupsIsNoClusterFitNamingTheConstraint(t *testing.T) {
	snap := st.Snapshot(t,
		st.Member("a", st.Labels(rack, "rack-1")),
		st.Member("b", st.Labels(rack, "rack-2")),
		st.Member("c", st.Labels(rack, "rack-2")),
		st.Member("d"),
	)
	res, err := scheduler.New().Schedule(snap, deployment(6, spreading(equalWeights(), byLabel(rack, 3, 3))))
	want := "NoClusterFit: spread constraint spreadByLabel=topology.flotilla.io/rack: minGroups 3, but only 2 group(s) available (rack-1, rack-2)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	row, _ := res.Explanation.Member("d")
	if row.FilteredBy != scheduler.PluginSpreadConstraint || row.Reason != "no group for spread constraint spreadByLabel=topology.flotilla.io/rack" {
		t.Errorf("d: %q %q, want excluded for lacking the label", row.FilteredBy, row.Reason)
	}
}

func TestSpreadStatedResults(t *testing.T) {
	regional := []clusterv1alpha1.MemberCluster{
		cpus("a", "10", st.Region("r0"), st.Zone("z0"), st.Provider("aws")),
		cpus("b", "30", st.Region("r0"), st.Zone("z1"), st.Provider("aws")),
		cpus("c", "20", st.Region("r1"), st.Zone("z2"), st.Provider("gcp")),
		cpus("d", "5", st.Region("r2"), st.Zone("z3"), st.Provider("gcp")),
	}
	racks := []clusterv1alpha1.MemberCluster{
		cpus("a", "10", st.Labels(rack, "rack-1")),
		cpus("b", "10", st.Labels(rack, "rack-2")),
		cpus("c", "10"),
	}
	tests := []struct {
		name      string
		members   []clusterv1alpha1.MemberCluster
		replicas  int32
		placement *policyv1alpha1.Placement
		want      string
	}{
		{"spread by label leaves out members without the label", racks, 4, spreading(equalWeights(), byLabel(rack, 2, 2)), "a:2 b:2"},
		{"one member per region: the roomiest of each of the 2 best regions", regional, 4,
			spreading(equalWeights(), byField("region", 2, 2), byField("cluster", 2, 2)), "b:2 c:2"},
		{"zones, at most 3 members", regional, 6,
			spreading(equalWeights(), byField("zone", 3, 3), byField("cluster", 1, 3)), "a:2 b:2 c:2"},
		{"providers: one of each", regional, 2,
			spreading(duplicated(), byField("provider", 2, 2), byField("cluster", 2, 2)), "b:2 c:2"},
		{"cluster maxGroups alone keeps the best members", regional, 2,
			spreading(duplicated(), byField("cluster", 1, 2)), "b:2 c:2"},
		{"Divided with region maxGroups 1 keeps the region that holds most", regional, 25,
			spreading(dynamicWeights(), byField("region", 1, 1), byField("cluster", 1, 0)), "a:6 b:19"},
		{"Aggregated keeps a member in each region that minGroups needs", regional, 4,
			spreading(aggregated(), byField("region", 2, 2), byField("cluster", 2, 4)), "b:2 c:2"},
		{"Divided: when the best-ranked group cannot hold the replicas the largest group is kept", []clusterv1alpha1.MemberCluster{
			cpus("x", "30", st.Region("r0")), cpus("y", "20", st.Region("r1")), cpus("z", "20", st.Region("r1")),
		}, 35, spreading(dynamicWeights(), byField("region", 1, 1), byField("cluster", 1, 0)), "y:18 z:17"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustSchedule(t, st.Snapshot(t, tt.members...), deployment(tt.replicas, tt.placement))
			if got := placed(res.Clusters); got != tt.want {
				t.Errorf("placement = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSpreadWhoseAllowedGroupsCannotHoldTheReplicasIsUnschedulable(t *testing.T) {
	snap := st.Snapshot(t, cpus("a", "10", st.Region("r0")), cpus("b", "10", st.Region("r1")))
	_, err := scheduler.New().Schedule(snap, deployment(15, spreading(equalWeights(), byField("region", 1, 1), byField("cluster", 1, 0))))
	want := "Unschedulable: spread constraint spreadByField=region: the 1 largest group(s) allowed by maxGroups hold 10 of 15 replicas"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}
