package enrolment_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// TestAClusterResourceEnvelopesContentsApplyAsTheHubIdentity: the Work a
// ClusterResourceEnvelope renders — a webhook configuration, a CRD and a
// ConfigMap of a namespace the member does not have yet, in a
// ClusterResourceBinding's Work — is applied by the hub's scoped identity,
// which is granted those kinds for it; the same contents in a
// ResourceBinding's Work are refused (a tenant's envelope).
func TestAClusterResourceEnvelopesContentsApplyAsTheHubIdentity(t *testing.T) {
	createCluster(t, "enrol-envelope", "enveloped", clusterOpts{labels: enrolled})
	waitEnrolled(t, "enveloped")
	contents := []map[string]any{
		{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": "guard-gadgets"},
			"webhooks": []any{map[string]any{
				"name": "gadgets.guard.example.com", "admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
				"clientConfig": map[string]any{"url": "https://guard.example.invalid/validate"},
				"rules":        []any{map[string]any{"apiGroups": []any{"guard.example.com"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"gadgets"}}},
			}}},
		{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "gadgets.guard.example.com"},
			"spec": map[string]any{"group": "guard.example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "guard-system", "name": "guard-settings"}, "data": map[string]any{"mode": "fleet"}},
	}

	tenant := pushWork(t, "enveloped", "tenant-envelope", "ResourceBinding", contents...)
	applyAsIdentity(t, "enveloped", tenant)
	if got := conditions.GetReason(tenant, workv1alpha1.WorkApplied); got != applier.AccessRefusedReason {
		t.Errorf("a ResourceBinding's Work: Applied reason %q, want %s (%s)", got, applier.AccessRefusedReason, conditions.GetMessage(tenant, workv1alpha1.WorkApplied))
	}

	w := pushWork(t, "enveloped", "cluster-envelope", "ClusterResourceBinding", contents...)
	applyUntilApplied(t, "enveloped", w)
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{},
		&apiextensionsv1.CustomResourceDefinition{},
		&corev1.ConfigMap{},
	} {
		key := client.ObjectKey{Name: "guard-gadgets"}
		switch obj.(type) {
		case *apiextensionsv1.CustomResourceDefinition:
			key.Name = "gadgets.guard.example.com"
		case *corev1.ConfigMap:
			key = client.ObjectKey{Namespace: "guard-system", Name: "guard-settings"}
		}
		if err := memberAdmin.Get(ctx(), key, obj); err != nil {
			t.Errorf("%T %s not in the member: %v", obj, key, err)
		}
	}
}
