package scheduler_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/affinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func affinityOf(a policyv1alpha1.ClusterAffinity) *policyv1alpha1.Placement {
	return with(duplicated(), func(p *policyv1alpha1.Placement) { p.ClusterAffinity = &a })
}

func regionSelector(op corev1.NodeSelectorOperator, values ...string) policyv1alpha1.ClusterAffinity {
	return policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []policyv1alpha1.FieldSelectorRequirement{
		{Key: "region", Operator: op, Values: values},
	}}}
}

func servingStatefulSets(m *clusterv1alpha1.MemberCluster) {
	m.Status.APIEnablements[0].Resources = append(m.Status.APIEnablements[0].Resources, clusterv1alpha1.APIResource{Name: "statefulsets", Kind: "StatefulSet"})
}

func tolerating(tolerations ...corev1.Toleration) *policyv1alpha1.Placement {
	return with(duplicated(), func(p *policyv1alpha1.Placement) { p.ClusterTolerations = tolerations })
}

// Member "x" is scheduled next to a healthy member "ok"; the table states
// whether x is dropped, by which plugin and why.
func TestFiltersDropMembersAndSayWhy(t *testing.T) {
	unreachable := "cluster.flotilla.io/unreachable"
	tests := []struct {
		name       string
		x          clusterv1alpha1.MemberCluster
		placement  *policyv1alpha1.Placement
		change     func(in *scheduler.Input)
		wantPlugin string // empty: x passes
		wantReason string
	}{
		{name: "healthy member passes", x: st.Member("x"), placement: duplicated()},
		{name: "not Ready", x: st.Member("x", st.NotReady("Unreachable")), placement: duplicated(),
			wantPlugin: "MemberReady", wantReason: "not Ready (Ready=False, Unreachable)"},
		{name: "no Ready condition", x: st.Member("x", func(m *clusterv1alpha1.MemberCluster) { m.Status.Conditions = nil }), placement: duplicated(),
			wantPlugin: "MemberReady", wantReason: "not Ready (no Ready condition)"},
		{name: "being deleted", x: st.Member("x", st.Deleting()), placement: duplicated(),
			wantPlugin: "MemberDeleting", wantReason: "member is being deleted"},
		{name: "binding being evicted from it", x: st.Member("x"), placement: duplicated(),
			change:     func(in *scheduler.Input) { in.EvictedFrom = []string{"x"} },
			wantPlugin: "GracefulEviction", wantReason: "binding is being evicted from this member"},
		{name: "cordoned", x: st.Member("x", st.Cordoned()), placement: duplicated(),
			wantPlugin: "Cordon", wantReason: "member is cordoned (spec.unschedulable)"},
		{name: "NoExecute taint without toleration", x: st.Member("x", st.Taint(unreachable, "", corev1.TaintEffectNoExecute)), placement: duplicated(),
			wantPlugin: "TaintToleration", wantReason: "untolerated taint cluster.flotilla.io/unreachable:NoExecute"},
		{name: "NoSchedule taint without toleration", x: st.Member("x", st.Taint("team", "a", corev1.TaintEffectNoSchedule)), placement: duplicated(),
			wantPlugin: "TaintToleration", wantReason: "untolerated taint team=a:NoSchedule"},
		{name: "PreferNoSchedule taint does not filter", x: st.Member("x", st.Taint("team", "a", corev1.TaintEffectPreferNoSchedule)), placement: duplicated()},
		{name: "NoExecute taint tolerated by Exists", x: st.Member("x", st.Taint(unreachable, "", corev1.TaintEffectNoExecute)),
			placement: tolerating(corev1.Toleration{Key: unreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})},
		{name: "toleration for NoSchedule only does not tolerate NoExecute", x: st.Member("x", st.Taint(unreachable, "", corev1.TaintEffectNoExecute)),
			placement:  tolerating(corev1.Toleration{Key: unreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			wantPlugin: "TaintToleration", wantReason: "untolerated taint cluster.flotilla.io/unreachable:NoExecute"},
		{name: "Equal toleration with the taint's value", x: st.Member("x", st.Taint("team", "a", corev1.TaintEffectNoSchedule)),
			placement: tolerating(corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a"})},
		{name: "Equal toleration with another value", x: st.Member("x", st.Taint("team", "a", corev1.TaintEffectNoSchedule)),
			placement:  tolerating(corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b"}),
			wantPlugin: "TaintToleration", wantReason: "untolerated taint team=a:NoSchedule"},
		{name: "empty key with Exists tolerates every taint", x: st.Member("x", st.Taint("team", "a", corev1.TaintEffectNoSchedule), st.Taint(unreachable, "", corev1.TaintEffectNoExecute)),
			placement: tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists})},
		{name: "resource not served", x: st.Member("x"), placement: duplicated(),
			change:     func(in *scheduler.Input) { in.Kind = "StatefulSet" },
			wantPlugin: "APIEnablement", wantReason: "apps/v1 StatefulSet is not served"},
		{name: "no API enablements reported is unknown, not served", x: st.Member("x", st.NoAPIs()), placement: duplicated(),
			wantPlugin: "APIEnablement", wantReason: plugins.ReasonNoAPIEnablements},
		{name: "fieldSelector region NotIn drops a member in the region", x: st.Member("x", st.Region("r1")), placement: affinityOf(regionSelector(corev1.NodeSelectorOpNotIn, "r1")),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: "does not match fieldSelector region NotIn (r1)"},
		{name: "fieldSelector region NotIn keeps a member in another region", x: st.Member("x", st.Region("r2")), placement: affinityOf(regionSelector(corev1.NodeSelectorOpNotIn, "r1"))},
		{name: "fieldSelector region NotIn keeps a member without a region", x: st.Member("x"), placement: affinityOf(regionSelector(corev1.NodeSelectorOpNotIn, "r1"))},
		{name: "fieldSelector region In", x: st.Member("x", st.Region("r2")), placement: affinityOf(regionSelector(corev1.NodeSelectorOpIn, "r0")),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: "does not match fieldSelector region In (r0)"},
		{name: "fieldSelector region Exists", x: st.Member("x"), placement: affinityOf(regionSelector(corev1.NodeSelectorOpExists)),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: "does not match fieldSelector region Exists"},
		{name: "fieldSelector provider DoesNotExist", x: st.Member("x", st.Provider("aws")), placement: affinityOf(policyv1alpha1.ClusterAffinity{
			FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []policyv1alpha1.FieldSelectorRequirement{{Key: "provider", Operator: corev1.NodeSelectorOpDoesNotExist}}}}),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: "does not match fieldSelector provider DoesNotExist"},
		{name: "fieldSelector zone In matches any of the member's zones", x: st.Member("x", func(m *clusterv1alpha1.MemberCluster) { m.Spec.Zones = []string{"z1", "z2"} }),
			placement: affinityOf(policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []policyv1alpha1.FieldSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}}})},
		{name: "labelSelector", x: st.Member("x", st.Labels("env", "dev")), placement: affinityOf(policyv1alpha1.ClusterAffinity{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: "labels do not match labelSelector env=prod"},
		{name: "clusterNames", x: st.Member("x"), placement: affinityOf(policyv1alpha1.ClusterAffinity{ClusterNames: []string{"ok"}}),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: affinity.ReasonNotInNames},
		{name: "exclude wins over clusterNames", x: st.Member("x"), placement: affinityOf(policyv1alpha1.ClusterAffinity{ClusterNames: []string{"x", "ok"}, ExcludeClusters: []string{"x"}}),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: affinity.ReasonExcluded},
		{name: "affinity is reported before other reasons", x: st.Member("x", st.NotReady("Unreachable")), placement: affinityOf(policyv1alpha1.ClusterAffinity{ClusterNames: []string{"ok"}}),
			wantPlugin: scheduler.PluginClusterAffinity, wantReason: affinity.ReasonNotInNames},
		{name: "dynamic weight needs a capacity model", x: st.Member("x"), placement: dynamicWeights(),
			wantPlugin: "CapacityModel", wantReason: plugins.ReasonNoCapacityModel},
		{name: "Aggregated needs a capacity model", x: st.Member("x"), placement: aggregated(),
			wantPlugin: "CapacityModel", wantReason: plugins.ReasonNoCapacityModel},
		{name: "static weights without a model are fine: capacity unknown", x: st.Member("x"), placement: equalWeights()},
		{name: "no staticWeightList entry selects it", x: st.Member("x"), placement: staticWeights("ok", 1),
			wantPlugin: "StaticWeight", wantReason: "matches no staticWeightList entry (weight 0)"},
		{name: "too small for a Duplicated copy", x: st.Member("x", st.Nodes(1, "cpu", "1")), placement: duplicated(),
			wantPlugin: "DuplicatedCapacity", wantReason: "insufficient capacity: 1 of 2 replicas fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := st.Member("ok", st.Region("r0"), st.Zone("z2"), st.Labels("env", "prod"), st.Nodes(1, "cpu", "8"), servingStatefulSets)
			snap := st.Snapshot(t, tt.x, ok)
			in := deployment(2, tt.placement)
			if tt.change != nil {
				tt.change(&in)
			}
			res, err := scheduler.New().Schedule(snap, in)
			if err != nil {
				t.Fatalf("Schedule: %v (the healthy member must still take the binding)", err)
			}
			row, _ := res.Explanation.Member("x")
			if row.FilteredBy != tt.wantPlugin || row.Reason != tt.wantReason {
				t.Errorf("x filtered by %q: %q; want %q: %q", row.FilteredBy, row.Reason, tt.wantPlugin, tt.wantReason)
			}
			if row.Selected == (tt.wantPlugin != "") {
				t.Errorf("x selected = %v, want %v", row.Selected, tt.wantPlugin == "")
			}
		})
	}
}

func TestNoMemberFitsListsEachMembersReasonConcisely(t *testing.T) {
	snap := st.Snapshot(t,
		st.Member("a", st.NotReady("Unreachable")),
		st.Member("b", st.Taint("cluster.flotilla.io/unreachable", "", corev1.TaintEffectNoExecute)),
		st.Member("c", st.Taint("cluster.flotilla.io/unreachable", "", corev1.TaintEffectNoExecute)),
		st.Member("d", st.Cordoned()),
	)
	_, err := scheduler.New().Schedule(snap, deployment(1, duplicated()))
	want := "NoClusterFit: 0/4 members fit: a: not Ready (Ready=False, Unreachable); " +
		"b, c: untolerated taint cluster.flotilla.io/unreachable:NoExecute; d: member is cordoned (spec.unschedulable)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if scheduler.ReasonOf(err) != "NoClusterFit" {
		t.Errorf("reason = %s, want NoClusterFit", scheduler.ReasonOf(err))
	}
}

func TestNoMemberFitsNamesAFewMembersPerReasonInLargeFleets(t *testing.T) {
	fleet := st.BenchFleet(100)
	snap := st.Snapshot(t, fleet...)
	_, err := scheduler.New().Schedule(snap, deployment(1, affinityOf(regionSelector(corev1.NodeSelectorOpIn, "r9"))))
	want := "NoClusterFit: 0/100 members fit: m0000, m0001, m0002 and 97 more: does not match fieldSelector region In (r9)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestDuplicatedWithoutRoomAnywhereIsUnschedulable(t *testing.T) {
	snap := st.Snapshot(t, st.Member("a", st.Nodes(1, "cpu", "1")), st.Member("b", st.Nodes(1, "cpu", "2")))
	_, err := scheduler.New().Schedule(snap, deployment(3, duplicated()))
	want := "Unschedulable: 0/2 members fit: a: insufficient capacity: 1 of 3 replicas fit; b: insufficient capacity: 2 of 3 replicas fit"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestClusterNamesNamingNoMemberSaysSoFirst(t *testing.T) {
	snap := st.Snapshot(t, st.Member("member1"), st.Member("member2"), st.Member("member3"))
	names := func(n ...string) *policyv1alpha1.Placement {
		return with(duplicated(), func(p *policyv1alpha1.Placement) {
			p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ClusterNames: n}
		})
	}
	_, err := scheduler.New().Schedule(snap, deployment(1, names("nosuch")))
	want := "NoClusterFit: clusterAffinity.clusterNames names nosuch, which is not a member of the fleet; " +
		"0/3 members fit: member1, member2, member3: not in clusterAffinity.clusterNames"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}

	res, err := scheduler.New().Schedule(snap, deployment(1, names("member2", "nosuch")))
	if err != nil {
		t.Fatal(err)
	}
	if want := "clusterAffinity.clusterNames names nosuch, which is not a member of the fleet"; res.UnknownMembers != want {
		t.Errorf("UnknownMembers = %q, want %q", res.UnknownMembers, want)
	}
	if got := placed(res.Clusters); got != "member2:1" {
		t.Errorf("placement = %s, want member2:1", got)
	}
}
