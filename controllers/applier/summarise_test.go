package applier

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// byType compares conditions as a set: Cluster API's Set orders them its own way.
var byType = cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })

func id(kind, name string) workv1alpha1.ResourceIdentifier {
	return workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: kind, Namespace: "fleet", Name: name}
}

func TestSummariseTakesTheFirstFailuresReasonAndListsEveryFailure(t *testing.T) {
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	healthy, applied := summarise(w, []result{
		{status: workv1alpha1.ManifestStatus{Identifier: id("Deployment", "ok"), Applied: true, Health: workv1alpha1.ResourceHealthy}},
		{status: workv1alpha1.ManifestStatus{Identifier: id("Widget", "w"), Message: "the member does not serve apps/v1, Kind=Widget"}, reason: workv1alpha1.WorkReasonAPINotEnabled},
		{status: workv1alpha1.ManifestStatus{Identifier: id("Deployment", "taken"), Message: ConflictMessage}, reason: workv1alpha1.WorkReasonConflict},
	})
	if healthy || applied {
		t.Errorf("summarise = healthy %v, applied %v with manifests not applied; want false, false", healthy, applied)
	}
	want := []metav1.Condition{
		{Type: "Applied", Status: "False", Reason: "APINotEnabled", ObservedGeneration: 2,
			Message: "2 of 3 manifests not applied: apps/v1 Widget fleet/w: the member does not serve apps/v1, Kind=Widget; apps/v1 Deployment fleet/taken: " + ConflictMessage},
		{Type: "Available", Status: "False", Reason: "NotAvailable", ObservedGeneration: 2, Message: "not every manifest is applied"},
	}
	if diff := cmp.Diff(want, w.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), byType); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if len(w.Status.ManifestStatuses) != 3 {
		t.Errorf("manifestStatuses has %d entries, want 3", len(w.Status.ManifestStatuses))
	}
}

func TestSummariseIsAvailableOnlyWhenEveryObjectIsHealthy(t *testing.T) {
	w := &workv1alpha1.Work{}
	healthy, applied := summarise(w, []result{
		{status: workv1alpha1.ManifestStatus{Identifier: id("Deployment", "web"), Applied: true, Health: workv1alpha1.ResourceUnhealthy, Message: "readyReplicas 1 of 3"}},
	})
	if healthy || !applied {
		t.Errorf("summarise = healthy %v, applied %v with an unhealthy applied object; want false, true", healthy, applied)
	}
	want := []metav1.Condition{
		{Type: "Applied", Status: "True", Reason: "Applied", Message: "applied 1 manifest"},
		{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "apps/v1 Deployment fleet/web: readyReplicas 1 of 3"},
	}
	if diff := cmp.Diff(want, w.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"), byType); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestManagedByFlotillaByLabelOrFieldManager(t *testing.T) {
	tests := []struct {
		name string
		meta metav1.ObjectMeta
		want bool
	}{
		{"labelled", metav1.ObjectMeta{Labels: map[string]string{"flotilla.io/managed-by": "flotilla"}}, true},
		{"owned by the flotilla field manager", metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}, {Manager: "flotilla"}}}, true},
		{"the member's own", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-create"}}}, false},
		{"labelled by someone else's value", metav1.ObjectMeta{Labels: map[string]string{"flotilla.io/managed-by": "someone"}}, false},
	}
	for _, tt := range tests {
		if got := managedByFlotilla(&tt.meta); got != tt.want {
			t.Errorf("%s: managedByFlotilla = %v, want %v", tt.name, got, tt.want)
		}
	}
}
