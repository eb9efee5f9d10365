package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// The detector's own first claim on a template does not wake it again (a
// Deployment counts the claim's annotations as a new generation); any other
// change to labels, annotations or claims, a generation more than the
// claim's, and every update of a kind without generations still do.
func TestTemplateChangedPassesAllButTheDetectorsOwnFirstClaim(t *testing.T) {
	pp, cpp := policyv1alpha1.PropagationPolicyPermanentIDLabel, policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel
	meta := func(generation int64, rv string, labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: generation, ResourceVersion: rv, Labels: labels}}
	}
	annotated := func(m *metav1.PartialObjectMetadata, annotations map[string]string) *metav1.PartialObjectMetadata {
		m.Annotations = annotations
		return m
	}
	claimed := map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "fleet", policyv1alpha1.PropagationPolicyNameAnnotation: "all"}
	claimedAndMore := map[string]string{policyv1alpha1.PropagationPolicyNamespaceAnnotation: "fleet", policyv1alpha1.PropagationPolicyNameAnnotation: "all", "team": "a"}
	tests := []struct {
		name     string
		old, cur *metav1.PartialObjectMetadata
		want     bool
	}{
		{"the first claim of a Deployment", meta(1, "1", map[string]string{"app": "web"}), meta(1, "2", map[string]string{"app": "web", pp: "u1"}), false},
		{"a first claim with another label", meta(1, "1", map[string]string{"app": "web"}), meta(1, "2", map[string]string{"app": "api", pp: "u1"}), true},
		{"the first claim of a Deployment, a generation for its annotations", meta(1, "1", nil), annotated(meta(2, "2", map[string]string{pp: "u1"}), claimed), false},
		{"a first claim with another annotation", meta(1, "1", nil), annotated(meta(2, "2", map[string]string{pp: "u1"}), claimedAndMore), true},
		{"a first claim and a spec change", meta(1, "1", nil), annotated(meta(3, "2", map[string]string{pp: "u1"}), claimed), true},
		{"a claim moved to another policy", meta(1, "1", map[string]string{pp: "u1"}), meta(1, "2", map[string]string{cpp: "u2"}), true},
		{"a claim removed", meta(1, "1", map[string]string{pp: "u1"}), meta(1, "2", nil), true},
		{"the first claim of a kind without generations", meta(0, "1", nil), meta(0, "2", map[string]string{pp: "u1"}), true},
		{"a status write", meta(1, "1", map[string]string{pp: "u1"}), meta(1, "2", map[string]string{pp: "u1"}), false},
		{"an annotation of a kind that does not count it as a generation", meta(1, "1", map[string]string{pp: "u1"}),
			annotated(meta(1, "2", map[string]string{pp: "u1"}), map[string]string{"team": "a"}), true},
		{"a resync", meta(1, "1", nil), meta(1, "1", nil), false},
	}
	p := templateChanged()
	for _, tt := range tests {
		if got := p.Update(event.TypedUpdateEvent[*metav1.PartialObjectMetadata]{ObjectOld: tt.old, ObjectNew: tt.cur}); got != tt.want {
			t.Errorf("%s: passed %t, want %t", tt.name, got, tt.want)
		}
	}
}
