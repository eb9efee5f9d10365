package detector

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/policymatch"
)

// claimOf reads which policy claims a template from its labels and
// annotations; nil when unclaimed.
func claimOf(obj metav1.Object) *policymatch.Ref {
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	if uid := labels[policyv1alpha1.PropagationPolicyPermanentIDLabel]; uid != "" {
		return &policymatch.Ref{
			Namespace: annotations[policyv1alpha1.PropagationPolicyNamespaceAnnotation],
			Name:      annotations[policyv1alpha1.PropagationPolicyNameAnnotation],
			UID:       types.UID(uid),
		}
	}
	if uid := labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; uid != "" {
		return &policymatch.Ref{
			Cluster: true,
			Name:    annotations[policyv1alpha1.ClusterPropagationPolicyNameAnnotation],
			UID:     types.UID(uid),
		}
	}
	return nil
}

// claimLabels are the labels (and annotations) that record a claim by ref,
// on a template and on its binding.
func claimLabels(ref policymatch.Ref) (labels, annotations map[string]string) {
	if ref.Cluster {
		return map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: string(ref.UID)},
			map[string]string{policyv1alpha1.ClusterPropagationPolicyNameAnnotation: ref.Name}
	}
	return map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: string(ref.UID)},
		map[string]string{
			policyv1alpha1.PropagationPolicyNamespaceAnnotation: ref.Namespace,
			policyv1alpha1.PropagationPolicyNameAnnotation:      ref.Name,
		}
}

var claimLabelKeys = []string{
	policyv1alpha1.PropagationPolicyPermanentIDLabel,
	policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel,
}

var claimAnnotationKeys = []string{
	policyv1alpha1.PropagationPolicyNamespaceAnnotation,
	policyv1alpha1.PropagationPolicyNameAnnotation,
	policyv1alpha1.ClusterPropagationPolicyNameAnnotation,
}

// setClaim records a claim by ref (nil: no claim) on obj, replacing any
// other; it reports whether anything changed.
func setClaim(obj metav1.Object, ref *policymatch.Ref) bool {
	labels, annotations := maps.Clone(obj.GetLabels()), maps.Clone(obj.GetAnnotations())
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	for _, k := range claimLabelKeys {
		delete(labels, k)
	}
	for _, k := range claimAnnotationKeys {
		delete(annotations, k)
	}
	if ref != nil {
		l, a := claimLabels(*ref)
		maps.Copy(labels, l)
		maps.Copy(annotations, a)
	}
	if maps.Equal(labels, obj.GetLabels()) && maps.Equal(annotations, obj.GetAnnotations()) {
		return false
	}
	obj.SetLabels(emptyToNil(labels))
	obj.SetAnnotations(emptyToNil(annotations))
	return true
}

func emptyToNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
