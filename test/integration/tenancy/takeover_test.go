package tenancy_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TestATenantAdminCannotMarkItsNamespaceForTakeover (threat row 15): the
// mark that lets PropagationPolicies take over members' objects,
// policy.flotilla.io/allow-overwrite=true on the namespace, is a cluster
// admin's. Namespaces are cluster-scoped, so neither admin nor edit of the
// namespace may patch or update it: impersonated requests are Forbidden and
// the label stays absent.
func TestATenantAdminCannotMarkItsNamespaceForTakeover(t *testing.T) {
	applyTenantRoles(t)
	const ns = "team-takeover"
	if err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{policyv1alpha1.FederatedLabel: "true"}}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind(t, ns, "carol", "admin")
	bind(t, ns, "dave", "edit")
	for _, user := range []string{"carol", "dave"} {
		tenant := as(t, user)
		eventually(t, user+"'s role in force (it lists the namespace's ConfigMaps)", func() error {
			return tenant.List(ctx(), &corev1.ConfigMapList{}, client.InNamespace(ns))
		})
		mark := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+policyv1alpha1.AllowOverwriteLabel+`":"true"}}}`))
		if err := tenant.Patch(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, mark); !apierrors.IsForbidden(err) {
			t.Errorf("%s patches namespace %s with %s=true: %v, want Forbidden", user, ns, policyv1alpha1.AllowOverwriteLabel, err)
		}
		current := &corev1.Namespace{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: ns}, current); err != nil {
			t.Fatal(err)
		}
		current.Labels[policyv1alpha1.AllowOverwriteLabel] = "true"
		if err := tenant.Update(ctx(), current); !apierrors.IsForbidden(err) {
			t.Errorf("%s updates namespace %s with %s=true: %v, want Forbidden", user, ns, policyv1alpha1.AllowOverwriteLabel, err)
		}
	}
	after := &corev1.Namespace{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: ns}, after); err != nil {
		t.Fatal(err)
	}
	if v, ok := after.Labels[policyv1alpha1.AllowOverwriteLabel]; ok {
		t.Errorf("namespace %s carries %s=%q, want no mark", ns, policyv1alpha1.AllowOverwriteLabel, v)
	}
}
