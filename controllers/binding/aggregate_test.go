package binding

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var web = workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "fleet", Name: "web"}

func workOn(member string, applied *metav1.Condition, manifests ...workv1alpha1.ManifestStatus) workv1alpha1.Work {
	w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 1, Namespace: clusterv1alpha1.ExecutionNamespace(member),
		Labels: map[string]string{clusterv1alpha1.MemberLabel: member}}}
	if applied != nil {
		applied.Type, applied.ObservedGeneration = workv1alpha1.WorkApplied, 1
		w.Status.Conditions = []metav1.Condition{*applied}
	}
	w.Status.ManifestStatuses = manifests
	return w
}

func deployment(health workv1alpha1.ResourceHealth, status string) workv1alpha1.ManifestStatus {
	return workv1alpha1.ManifestStatus{
		Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "fleet", Name: "web"},
		Applied:    true, Health: health, Status: &runtime.RawExtension{Raw: []byte(status)},
	}
}

func TestAggregateSumsMembersAndSaysWhichAreNotApplied(t *testing.T) {
	spec := &workv1alpha1.ResourceBindingSpec{Resource: web, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 4}, {Name: "m2", Replicas: 2}, {Name: "m3", Replicas: 1}}}
	works := []workv1alpha1.Work{
		workOn("m1", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"},
			workv1alpha1.ManifestStatus{Identifier: workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "fleet", Name: "dep"}, Applied: true, Health: workv1alpha1.ResourceHealthy},
			deployment(workv1alpha1.ResourceHealthy, `{"replicas":4,"readyReplicas":4,"availableReplicas":4,"updatedReplicas":4}`)),
		workOn("m2", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"},
			deployment(workv1alpha1.ResourceUnhealthy, `{"replicas":2,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":2}`)),
		workOn("m3", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "APINotEnabled", Message: "the member does not serve apps/v1, Kind=Deployment"}),
	}
	a := Aggregate(spec, works)
	if a.Replicas != 6 || a.ReadyReplicas != 5 || a.AvailableReplicas != 5 || a.UpdatedReplicas != 6 {
		t.Errorf("sums replicas %d ready %d available %d updated %d, want 6 5 5 6", a.Replicas, a.ReadyReplicas, a.AvailableReplicas, a.UpdatedReplicas)
	}
	wantItems := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":4,"readyReplicas":4,"availableReplicas":4,"updatedReplicas":4}`)}},
		{ClusterName: "m2", Applied: true, Health: workv1alpha1.ResourceUnhealthy, Status: &runtime.RawExtension{Raw: []byte(`{"replicas":2,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":2}`)}},
		{ClusterName: "m3", Applied: false, AppliedMessage: "the member does not serve apps/v1, Kind=Deployment", Health: workv1alpha1.ResourceUnknown},
	}
	if diff := cmp.Diff(wantItems, a.Items); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	wantCondition := metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionFalse, Reason: "NotFullyApplied",
		Message: "not applied on m3: the member does not serve apps/v1, Kind=Deployment"}
	if diff := cmp.Diff(wantCondition, a.Condition); diff != "" {
		t.Errorf("condition (-want +got):\n%s", diff)
	}
	if !a.Failed {
		t.Error("Failed = false, want true: m3 reported it could not apply")
	}
}

func TestAggregateTellsPendingFromFailed(t *testing.T) {
	tests := []struct {
		name          string
		clusters      []string
		works         []workv1alpha1.Work
		wantCondition metav1.Condition
		wantFailed    bool
	}{
		{
			name:          "not scheduled",
			wantCondition: metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionFalse, Reason: "NotScheduled", Message: "not scheduled to any member yet"},
		},
		{
			name:          "no Work yet",
			clusters:      []string{"m1"},
			wantCondition: metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionFalse, Reason: "NotFullyApplied", Message: "not applied on m1: Work not created yet"},
		},
		{
			name:          "a Work not applied yet",
			clusters:      []string{"m1"},
			works:         []workv1alpha1.Work{workOn("m1", nil)},
			wantCondition: metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionFalse, Reason: "NotFullyApplied", Message: "not applied on m1: Work not applied yet"},
		},
		{
			name:          "every member applied",
			clusters:      []string{"m1", "m2"},
			works:         []workv1alpha1.Work{workOn("m2", &metav1.Condition{Status: metav1.ConditionTrue}), workOn("m1", &metav1.Condition{Status: metav1.ConditionTrue})},
			wantCondition: metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionTrue, Reason: "FullyApplied", Message: "applied on m1, m2"},
		},
		{
			name:          "a member refused",
			clusters:      []string{"m1"},
			works:         []workv1alpha1.Work{workOn("m1", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Conflict", Message: "conflict"})},
			wantCondition: metav1.Condition{Type: "FullyApplied", Status: metav1.ConditionFalse, Reason: "NotFullyApplied", Message: "not applied on m1: conflict"},
			wantFailed:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &workv1alpha1.ResourceBindingSpec{Resource: web}
			for _, c := range tt.clusters {
				spec.Clusters = append(spec.Clusters, workv1alpha1.TargetCluster{Name: c})
			}
			a := Aggregate(spec, tt.works)
			if diff := cmp.Diff(tt.wantCondition, a.Condition); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
			if a.Failed != tt.wantFailed {
				t.Errorf("Failed = %v, want %v", a.Failed, tt.wantFailed)
			}
		})
	}
}

func TestAWorkCountsForTheMemberOfItsExecutionNamespaceNotOfItsLabel(t *testing.T) {
	spec := &workv1alpha1.ResourceBindingSpec{Resource: web, Clusters: []workv1alpha1.TargetCluster{{Name: "honest", Replicas: 2}, {Name: "spoofer", Replicas: 2}}}
	// spoofer's Work claims, by label, to be honest's and to be healthy;
	// honest has not applied its Work yet.
	forged := workOn("spoofer", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"},
		deployment(workv1alpha1.ResourceHealthy, `{"replicas":2,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":2}`))
	forged.Labels[clusterv1alpha1.MemberLabel] = "honest"
	honest := workOn("honest", &metav1.Condition{Status: metav1.ConditionFalse, Reason: "ApplyFailed", Message: "not yet"})

	a := Aggregate(spec, []workv1alpha1.Work{forged, honest})
	got := map[string]bool{}
	for _, item := range a.Items {
		got[item.ClusterName] = item.Applied
	}
	if got["honest"] || !got["spoofer"] {
		t.Errorf("applied by member = %v, want honest false (its own Work) and spoofer true (the forged Work is spoofer's)", got)
	}
}

func TestHealthTransitionTimeIsKeptWhileHealthStaysAndResetWhenItChanges(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	previous := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "same", Health: workv1alpha1.ResourceUnhealthy, HealthTransitionTime: &t0},
		{ClusterName: "changed", Health: workv1alpha1.ResourceHealthy, HealthTransitionTime: &t0},
	}
	items := []workv1alpha1.AggregatedStatusItem{
		{ClusterName: "same", Health: workv1alpha1.ResourceUnhealthy},
		{ClusterName: "changed", Health: workv1alpha1.ResourceUnhealthy},
		{ClusterName: "new", Health: workv1alpha1.ResourceUnknown},
	}
	KeepHealthTransitions(items, previous, t1)
	for _, c := range []struct {
		member string
		want   metav1.Time
	}{{"same", t0}, {"changed", t1}, {"new", t1}} {
		for _, it := range items {
			if it.ClusterName == c.member && (it.HealthTransitionTime == nil || !it.HealthTransitionTime.Equal(&c.want)) {
				t.Errorf("%s: healthTransitionTime %v, want %v", c.member, it.HealthTransitionTime, c.want)
			}
		}
	}
}
