package tenancy_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const clusterResourceEnvelope = `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: %s}
data:
  webhook:
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: intercept-everything}
    webhooks:
    - name: intercept.example.com
      admissionReviewVersions: [v1]
      sideEffects: None
      clientConfig: {url: "https://intercept.example.invalid/"}
      rules: [{apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}]`

// TestOnlyAClusterAdminWritesAClusterResourceEnvelope: carol holds
// Kubernetes' admin in team-e (with Flotilla's tenant roles aggregated in),
// dave holds edit in every namespace through a ClusterRoleBinding. Neither
// may create, read, change or delete a ClusterResourceEnvelope — its
// contents go to members unconfined. Erin, bound to cluster-admin, may.
func TestOnlyAClusterAdminWritesAClusterResourceEnvelope(t *testing.T) {
	applyTenantRoles(t)
	if err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-e"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind(t, "team-e", "carol", "admin")
	bindClusterWide(t, "dave", "edit")
	bindClusterWide(t, "erin", "cluster-admin")
	carol, dave, erin := as(t, "carol"), as(t, "dave"), as(t, "erin")

	// The tenant roles are aggregated: carol writes her policies.
	pp := object(t, fmt.Sprintf(propagationPolicy, "team-e"))
	eventually(t, "carol may create a PropagationPolicy in team-e", func() error { return carol.Create(ctx(), pp) })

	existing := object(t, fmt.Sprintf(clusterResourceEnvelope, "platform-admission"))
	if err := erin.Create(ctx(), existing); err != nil {
		t.Fatalf("erin (cluster-admin) creates a ClusterResourceEnvelope: %v", err)
	}
	for name, tenant := range map[string]client.Client{"carol": carol, "dave": dave} {
		if err := tenant.Create(ctx(), object(t, fmt.Sprintf(clusterResourceEnvelope, name+"-admission"))); !apierrors.IsForbidden(err) {
			t.Errorf("%s creates a ClusterResourceEnvelope: %v, want Forbidden", name, err)
		}
		got := object(t, fmt.Sprintf(clusterResourceEnvelope, "platform-admission"))
		if err := tenant.Get(ctx(), client.ObjectKeyFromObject(got), got); !apierrors.IsForbidden(err) {
			t.Errorf("%s reads a ClusterResourceEnvelope: %v, want Forbidden", name, err)
		}
		if err := tenant.List(ctx(), listOf("policy.flotilla.io/v1alpha1", "ClusterResourceEnvelopeList")); !apierrors.IsForbidden(err) {
			t.Errorf("%s lists ClusterResourceEnvelopes: %v, want Forbidden", name, err)
		}
		if err := tenant.Patch(ctx(), existing, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"webhook":{"metadata":{"name":"other"}}}}`))); !apierrors.IsForbidden(err) {
			t.Errorf("%s patches a ClusterResourceEnvelope: %v, want Forbidden", name, err)
		}
		if err := tenant.Delete(ctx(), existing); !apierrors.IsForbidden(err) {
			t.Errorf("%s deletes a ClusterResourceEnvelope: %v, want Forbidden", name, err)
		}
	}
	if err := erin.Delete(ctx(), existing); err != nil {
		t.Errorf("erin (cluster-admin) deletes the ClusterResourceEnvelope: %v", err)
	}
}

// bindClusterWide gives user the ClusterRole role in every namespace and
// for cluster-scoped objects.
func bindClusterWide(t *testing.T, user, role string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := hub.Client.Create(ctx(), crb); err != nil {
		t.Fatal(err)
	}
}
