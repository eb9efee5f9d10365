package membernames

import (
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestUnknownNamesAreReportedPerFieldWithTheUsersWords(t *testing.T) {
	fleet := Set([]string{"member1", "member2", "member3"})
	cases := []struct {
		name      string
		placement *policyv1alpha1.Placement
		want      string
	}{
		{"no placement", nil, ""},
		{"no names", &policyv1alpha1.Placement{}, ""},
		{"all members", &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member3"}}}, ""},
		{"one unknown", &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nosuch"}}},
			"clusterAffinity.clusterNames names nosuch, which is not a member of the fleet"},
		{"two unknown, repeated, among members", &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"x", "member1", "y", "x"}}},
			"clusterAffinity.clusterNames names x, y, which are not members of the fleet"},
		{"an excluded non-member is harmless", &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ExcludeClusters: []string{"gone"}}}, ""},
		{"ordered terms and overflow", &policyv1alpha1.Placement{ClusterAffinities: []policyv1alpha1.ClusterAffinityTerm{
			{AffinityName: "primary", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "typo"}},
				OverflowAffinities: []policyv1alpha1.OverflowClusterAffinity{{AffinityName: "burst", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"cloud"}}}}},
			{AffinityName: "backup", ClusterAffinity: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member2"}}},
		}}, "clusterAffinities[primary].clusterNames names typo, which is not a member of the fleet; " +
			"clusterAffinities[primary].overflowAffinities[burst].clusterNames names cloud, which is not a member of the fleet"},
		{"static weight list", &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 1},
				{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nosuch"}}, Weight: 2},
			}}}}, "staticWeightList[1].targetCluster.clusterNames names nosuch, which is not a member of the fleet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Message(InPlacement(c.placement, fleet)); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestUnknownNamesInOverrideRules(t *testing.T) {
	fleet := Set([]string{"member1"})
	spec := &policyv1alpha1.OverrideSpec{
		TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"old"}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{
			{}, // every member
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nosuch"}}},
		},
	}
	want := "targetCluster.clusterNames names old, which is not a member of the fleet; " +
		"overrideRules[2].targetCluster.clusterNames names nosuch, which is not a member of the fleet"
	if got := Message(InOverride(spec, fleet)); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
