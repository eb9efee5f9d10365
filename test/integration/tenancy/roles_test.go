package tenancy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/test/testenv"
)

func ctx() context.Context { return context.Background() }

// applyTenantRoles creates the ClusterRoles of config/rbac/tenant_roles.yaml
// as the release ships them.
func applyTenantRoles(t *testing.T) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "tenant_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := hub.Client.Create(ctx(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s: %v", u.GetName(), err)
		}
	}
}

// as is a client impersonating user.
func as(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(hub.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: hub.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bind gives user the ClusterRole role in namespace.
func bind(t *testing.T, namespace, user, role string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := hub.Client.Create(ctx(), rb); err != nil {
		t.Fatal(err)
	}
}

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	propagationPolicy = `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]`
	overridePolicy = `
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: web, namespace: %s}
spec:
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {tier: edge}}]}}]`
	resourceBinding = `
apiVersion: work.flotilla.io/v1alpha1
kind: ResourceBinding
metadata: {name: web-deployment, namespace: %s}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web}
  clusters: [{name: member1, replicas: 100}]`
	work = `
apiVersion: work.flotilla.io/v1alpha1
kind: Work
metadata: {name: planted, namespace: %s}
spec: {workload: {manifests: []}}`
	quota = `
apiVersion: policy.flotilla.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: more, namespace: %s}
spec: {overall: {cpu: "1000"}}`
	clusterPropagationPolicy = `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everything}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Secret}]`
	clusterOverridePolicy = `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: everywhere}
spec:
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {owned: "yes"}}]}}]`
)

// TestATenantAdminWritesItsPoliciesAndNothingElse: alice holds Kubernetes'
// admin ClusterRole in team-a, nothing more. She can create, update and
// delete PropagationPolicies and OverridePolicies there, and read
// bindings and quota; she is Forbidden to create ResourceBindings, Works,
// FederatedResourceQuotas, ClusterPropagationPolicies and
// ClusterOverridePolicies, and to write policies in another namespace.
func TestATenantAdminWritesItsPoliciesAndNothingElse(t *testing.T) {
	applyTenantRoles(t)
	for _, ns := range []string{"team-a", "team-b", "flotilla-es-member1"} {
		if err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	bind(t, "team-a", "alice", "admin")
	alice := as(t, "alice")

	// The aggregation controller folds the tenant roles into admin.
	pp := object(t, fmt.Sprintf(propagationPolicy, "team-a"))
	eventually(t, "alice may create a PropagationPolicy in team-a", func() error { return alice.Create(ctx(), pp) })
	admin := &rbacv1.ClusterRole{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "admin"}, admin); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(admin.Rules), "policy.flotilla.io") || admin.AggregationRule == nil {
		t.Errorf("admin holds no aggregated Flotilla rules: %v", admin.Rules)
	}
	op := object(t, fmt.Sprintf(overridePolicy, "team-a"))
	if err := alice.Create(ctx(), op); err != nil {
		t.Fatalf("alice creates an OverridePolicy in team-a: %v", err)
	}
	for _, obj := range []*unstructured.Unstructured{pp, op} {
		obj.SetLabels(map[string]string{"changed": "yes"})
		if err := alice.Update(ctx(), obj); err != nil {
			t.Errorf("alice updates %s: %v", obj.GetKind(), err)
		}
	}

	// What the manager and cluster admins write, a tenant admin may not.
	hubRB := object(t, fmt.Sprintf(resourceBinding, "team-a"))
	if err := hub.Client.Create(ctx(), hubRB); err != nil {
		t.Fatal(err)
	}
	for name, manifest := range map[string]string{
		"a ResourceBinding in team-a":        fmt.Sprintf(resourceBinding, "team-a"),
		"a Work in team-a":                   fmt.Sprintf(work, "team-a"),
		"a Work in a member's namespace":     fmt.Sprintf(work, "flotilla-es-member1"),
		"a FederatedResourceQuota in team-a": fmt.Sprintf(quota, "team-a"),
		"a ClusterPropagationPolicy":         clusterPropagationPolicy,
		"a ClusterOverridePolicy":            clusterOverridePolicy,
		"a PropagationPolicy in team-b":      fmt.Sprintf(propagationPolicy, "team-b"),
		"an OverridePolicy in team-b":        fmt.Sprintf(overridePolicy, "team-b"),
	} {
		obj := object(t, manifest)
		if obj.GetKind() == "ResourceBinding" {
			obj.SetName("forged")
		}
		if err := alice.Create(ctx(), obj); !apierrors.IsForbidden(err) {
			t.Errorf("alice creates %s: %v, want Forbidden", name, err)
		}
	}
	// Nor change the binding the manager wrote (give herself more replicas).
	rb := hubRB.DeepCopy()
	if err := alice.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
		t.Fatalf("alice reads the binding of her namespace: %v", err)
	}
	_ = unstructured.SetNestedSlice(rb.Object, []any{map[string]any{"name": "member1", "replicas": int64(1000)}}, "spec", "clusters")
	if err := alice.Update(ctx(), rb); !apierrors.IsForbidden(err) {
		t.Errorf("alice updates the ResourceBinding: %v, want Forbidden", err)
	}
	if err := alice.Delete(ctx(), rb); !apierrors.IsForbidden(err) {
		t.Errorf("alice deletes the ResourceBinding: %v, want Forbidden", err)
	}
	if err := alice.Status().Patch(ctx(), rb, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"conditions":[]}}`))); !apierrors.IsForbidden(err) {
		t.Errorf("alice patches the ResourceBinding's status: %v, want Forbidden", err)
	}

	for _, obj := range []*unstructured.Unstructured{pp, op} {
		if err := alice.Delete(ctx(), obj); err != nil {
			t.Errorf("alice deletes %s: %v", obj.GetKind(), err)
		}
	}
}

// TestATenantViewerReadsPoliciesBindingsAndQuota: bob holds view in
// team-a: he reads PropagationPolicies, OverridePolicies, ResourceBindings
// and FederatedResourceQuotas there, and writes none of them.
func TestATenantViewerReadsPoliciesBindingsAndQuota(t *testing.T) {
	applyTenantRoles(t)
	if err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-v"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind(t, "team-v", "bob", "view")
	bob := as(t, "bob")
	for _, manifest := range []string{propagationPolicy, overridePolicy, resourceBinding, quota} {
		if err := hub.Client.Create(ctx(), object(t, fmt.Sprintf(manifest, "team-v"))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "bob may list FederatedResourceQuotas in team-v", func() error {
		return bob.List(ctx(), listOf("policy.flotilla.io/v1alpha1", "FederatedResourceQuotaList"), client.InNamespace("team-v"))
	})
	for _, kind := range []struct{ apiVersion, kind, name string }{
		{"policy.flotilla.io/v1alpha1", "PropagationPolicy", "web"},
		{"policy.flotilla.io/v1alpha1", "OverridePolicy", "web"},
		{"work.flotilla.io/v1alpha1", "ResourceBinding", "web-deployment"},
		{"policy.flotilla.io/v1alpha1", "FederatedResourceQuota", "more"},
	} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(kind.apiVersion)
		obj.SetKind(kind.kind)
		if err := bob.Get(ctx(), client.ObjectKey{Namespace: "team-v", Name: kind.name}, obj); err != nil {
			t.Errorf("bob reads the %s: %v", kind.kind, err)
			continue
		}
		obj.SetLabels(map[string]string{"changed": "yes"})
		if err := bob.Update(ctx(), obj); !apierrors.IsForbidden(err) {
			t.Errorf("bob updates the %s: %v, want Forbidden", kind.kind, err)
		}
	}
	pp := object(t, fmt.Sprintf(propagationPolicy, "team-v"))
	pp.SetName("bobs")
	if err := bob.Create(ctx(), pp); !apierrors.IsForbidden(err) {
		t.Errorf("bob creates a PropagationPolicy: %v, want Forbidden", err)
	}
}

func listOf(apiVersion, kind string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(apiVersion)
	l.SetKind(kind)
	return l
}
