package framework_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestSnapshotSortsMembersByNameAndIndexesThem(t *testing.T) {
	s := st.Snapshot(t, st.Member("c"), st.Member("a"), st.Member("b"))
	if !slices.Equal(s.Names(), []string{"a", "b", "c"}) {
		t.Fatalf("names = %v, want [a b c]", s.Names())
	}
	for i := range s.Len() {
		if s.Member(i).Index != i {
			t.Errorf("member %s has index %d, want %d", s.Member(i).Name, s.Member(i).Index, i)
		}
	}
	if m, ok := s.Lookup("b"); !ok || m.Index != 1 {
		t.Errorf("Lookup(b) = %v, %v", m, ok)
	}
}

func TestSnapshotRejectsAmbiguousMembers(t *testing.T) {
	if _, err := framework.NewSnapshot([]clusterv1alpha1.MemberCluster{st.Member("a"), st.Member("a")}); err == nil {
		t.Error("duplicate names accepted")
	}
	if _, err := framework.NewSnapshot([]clusterv1alpha1.MemberCluster{st.Member("")}); err == nil {
		t.Error("empty name accepted")
	}
}

func TestMemberCompilation(t *testing.T) {
	s := st.Snapshot(t, st.Member("a",
		func(m *clusterv1alpha1.MemberCluster) { m.Spec.Zones = []string{"z2", "z1", "z2"} },
		st.Taint("soft", "", corev1.TaintEffectPreferNoSchedule),
		st.Taint("hard", "x", corev1.TaintEffectNoSchedule),
		st.NotReady("ControlPlaneUnavailable"),
	))
	m := s.Member(0)
	if m.Zone != "z1" || !slices.Equal(m.Zones, []string{"z1", "z2"}) {
		t.Errorf("zone %q zones %v, want z1 and [z1 z2]", m.Zone, m.Zones)
	}
	if len(m.Taints) != 1 || m.TaintReasons[0] != "untolerated taint hard=x:NoSchedule" {
		t.Errorf("taints %v reasons %v, want only the NoSchedule one", m.Taints, m.TaintReasons)
	}
	if m.NotReadyReason != "not Ready (Ready=False, ControlPlaneUnavailable)" {
		t.Errorf("not ready reason %q", m.NotReadyReason)
	}
	if !m.Serves("apps/v1", "Deployment") || m.Serves("apps/v1", "StatefulSet") || !m.APIsReported {
		t.Errorf("API enablements misread")
	}
	served := s.ServedBy("apps/v1", "Deployment")
	if len(served) != 1 || !served[0] {
		t.Errorf("ServedBy = %v, want [true]", served)
	}
}

func TestStrategyOfReadsReplicaSchedulingLikeKarmada(t *testing.T) {
	rs := func(typ policyv1alpha1.ReplicaSchedulingType, pref policyv1alpha1.ReplicaDivisionPreference, wp *policyv1alpha1.ClusterPreferences) *policyv1alpha1.ReplicaSchedulingStrategy {
		return &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: typ, ReplicaDivisionPreference: pref, WeightPreference: wp}
	}
	static := &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{{Weight: 1}}}
	dynamic := &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas}
	tests := []struct {
		name    string
		in      *policyv1alpha1.ReplicaSchedulingStrategy
		want    framework.Strategy
		wantErr bool
	}{
		{"none is Duplicated", nil, framework.Duplicated, false},
		{"Duplicated", rs("Duplicated", "", nil), framework.Duplicated, false},
		{"Divided without preference is equal static weights", rs("Divided", "", nil), framework.StaticWeighted, false},
		{"Weighted without weights is equal static weights", rs("Divided", "Weighted", nil), framework.StaticWeighted, false},
		{"static weight list", rs("Divided", "Weighted", static), framework.StaticWeighted, false},
		{"dynamic weight", rs("Divided", "Weighted", dynamic), framework.DynamicWeighted, false},
		{"Aggregated", rs("Divided", "Aggregated", nil), framework.Aggregated, false},
		{"unknown type", rs("Sharded", "", nil), 0, true},
		{"unknown dynamic weight", rs("Divided", "Weighted", &policyv1alpha1.ClusterPreferences{DynamicWeight: "Cost"}), 0, true},
		{"both weights", rs("Divided", "Weighted", &policyv1alpha1.ClusterPreferences{DynamicWeight: "AvailableReplicas", StaticWeightList: static.StaticWeightList}), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := framework.StrategyOf(tt.in)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Errorf("StrategyOf = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
