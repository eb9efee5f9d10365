package enrolment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/enrolment"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
)

// pushApplier applies Works as the execution controller does: through the
// member's scoped identity, with enrolment's Access granting what a Work
// needs first.
func pushApplier() *applier.Applier {
	a := &applier.Applier{
		Works: hub.Client, Members: identityClients{memberClients()}, Access: &enrolment.Access{Reader: hub.Client},
		Recorder: events.NewFakeRecorder(100),
	}
	a.Default()
	return a
}

type identityClients struct{ cache *memberclient.Cache }

func (m identityClients) ClientFor(ctx context.Context, member string) (client.Client, apimeta.RESTMapper, error) {
	conn, err := m.cache.Get(ctx, member)
	if err != nil {
		return nil, nil, err
	}
	return conn.Client, conn.Client.RESTMapper(), nil
}

// pushWork is a Work of the member as the binding controller renders it;
// kind is the binding's kind (ResourceBinding or ClusterResourceBinding).
func pushWork(t *testing.T, member, name, kind string, objs ...map[string]any) *workv1alpha1.Work {
	t.Helper()
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: name, Generation: 1,
		Annotations: map[string]string{workv1alpha1.BindingKindAnnotation: kind},
	}}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return w
}

// applyAsIdentity applies w once, as the execution controller does.
func applyAsIdentity(t *testing.T, member string, w *workv1alpha1.Work) {
	t.Helper()
	if _, err := pushApplier().Apply(ctx(), member, w); err != nil {
		t.Fatalf("apply Work %s: %v", w.Name, err)
	}
}

// applyUntilApplied applies w as the execution controller retries it (a
// grant may wait for the member's admission policy to be in force).
func applyUntilApplied(t *testing.T, member string, w *workv1alpha1.Work) {
	t.Helper()
	a := pushApplier()
	eventually(t, "Work "+w.Name+" applied as the hub identity", func() error {
		if _, err := a.Apply(ctx(), member, w); err != nil {
			return err
		}
		if !conditions.IsTrue(w, workv1alpha1.WorkApplied) {
			return fmt.Errorf("Applied: %s", conditions.GetMessage(w, workv1alpha1.WorkApplied))
		}
		return nil
	})
}

// wantRefused asserts the member's apiserver refused a request: Forbidden
// (RBAC, or the identity's admission policy) or Invalid.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("%s: got %v, want Forbidden or Invalid from the member's apiserver", what, err)
	}
}

func tokenSecret(namespace, name, serviceAccount string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: serviceAccount}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
}

func pod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			SecurityContext: &corev1.SecurityContext{Privileged: ptrTo(true)}}}},
	}
}

func TestPushIdentityAppliesWorksInManagedNamespacesAndCannotEscalate(t *testing.T) {
	createCluster(t, "enrol-identity", "scoped", clusterOpts{labels: enrolled})
	waitEnrolled(t, "scoped")
	m, err := memberClients().Get(ctx(), "scoped")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(hubIdentity(t, "scoped").Data["value"]), "client-certificate-data") {
		t.Fatal("the hub identity kubeconfig carries a client certificate: it must be the ServiceAccount token, not CAPI's admin credentials")
	}
	c := m.Client

	// Before any Work the identity writes nowhere, not even a namespace.
	wantRefused(t, "creating a namespace before any Work needs it",
		c.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "self-granted"}}))

	// A Work's objects in a namespace: the namespace is granted (created
	// with the admin kubeconfig) and the identity applies them.
	w := pushWork(t, "scoped", "web", "ResourceBinding",
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "pushed", "name": "web"}, "data": map[string]any{"k": "v"}},
		map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": "pushed", "name": "web-tls"}, "stringData": map[string]any{"k": "v"}},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"namespace": "pushed", "name": "web"},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.k8s.io/pause:3.10"}}}}}},
	)
	applyUntilApplied(t, "scoped", w)
	ns := &corev1.Namespace{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "pushed"}, ns); err != nil || ns.Labels[enrolment.ManagedNamespaceLabel] != "true" {
		t.Fatalf("namespace pushed not managed (%v): labels %v", err, ns.Labels)
	}
	// Reading status back works too.
	if err := c.Get(ctx(), client.ObjectKey{Namespace: "pushed", Name: "web-tls"}, &corev1.Secret{}); err != nil {
		t.Errorf("reading a Secret of a managed namespace: %v", err)
	}

	// Attacks, each a real request as the identity.
	wantRefused(t, "a token Secret for another ServiceAccount in a managed namespace",
		c.Create(ctx(), tokenSecret("pushed", "steal-default", "default")))
	wantRefused(t, "a token Secret for kube-system's ServiceAccount",
		c.Create(ctx(), tokenSecret("kube-system", "steal", "default")))
	wantRefused(t, "a privileged Pod in kube-system", c.Create(ctx(), pod("kube-system", "root")))
	wantRefused(t, "a Pod in a namespace Flotilla does not manage", c.Create(ctx(), pod("default", "stray")))
	wantRefused(t, "binding cluster-admin", c.Create(ctx(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub-escalates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-hub"}},
	}))
	wantRefused(t, "a RoleBinding in a managed namespace", c.Create(ctx(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pushed", Name: "escalates"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flotilla-hub-namespaced"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "pushed", Name: "default"}},
	}))
	wantRefused(t, "reading kube-system's Secrets", c.List(ctx(), &corev1.SecretList{}, client.InNamespace("kube-system")))
	wantRefused(t, "reading Secrets of every namespace", c.List(ctx(), &corev1.SecretList{}))
	wantRefused(t, "a validating webhook configuration", c.Create(ctx(), webhook("flotilla-hub-intercepts")))
	wantRefused(t, "changing its own admission policy", c.Delete(ctx(), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-hub"}}))
	cs := kubernetes.NewForConfigOrDie(m.Config)
	_, err = cs.CoreV1().ServiceAccounts("pushed").CreateToken(ctx(), "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	wantRefused(t, "a TokenRequest for a managed namespace's ServiceAccount", err)
	imp := rest.CopyConfig(m.Config)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
	_, err = kubernetes.NewForConfigOrDie(imp).CoreV1().Namespaces().List(ctx(), metav1.ListOptions{})
	wantRefused(t, "impersonating system:masters", err)

	// A namespaced policy's Work cannot widen the identity: cluster-scoped
	// kinds and reserved namespaces are refused, with a reason.
	for name, obj := range map[string]map[string]any{
		"tenant-clusterrole": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "tenant"}},
		"tenant-kube-system": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "kube-system", "name": "tenant"}},
	} {
		w := pushWork(t, "scoped", name, "ResourceBinding", obj)
		applyAsIdentity(t, "scoped", w)
		if got := conditions.GetReason(w, workv1alpha1.WorkApplied); got != applier.AccessRefusedReason {
			t.Errorf("Work %s: Applied reason %q, want %s (%s)", name, got, applier.AccessRefusedReason, conditions.GetMessage(w, workv1alpha1.WorkApplied))
		}
	}
}

func TestClusterPropagationGrantsOnlyTheKindsItPropagates(t *testing.T) {
	createCluster(t, "enrol-granted", "granted", clusterOpts{labels: enrolled})
	waitEnrolled(t, "granted")
	m, err := memberClients().Get(ctx(), "granted")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Client

	// A ClusterPropagationPolicy propagates a ClusterRole and a namespaced
	// Role: those kinds are granted, nothing else.
	w := pushWork(t, "granted", "reader", "ClusterResourceBinding",
		map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "fleet-reader"},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}},
		map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"namespace": "fleet-ops", "name": "reader"},
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}},
	)
	applyUntilApplied(t, "granted", w)
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "fleet-reader"}, &rbacv1.ClusterRole{}); err != nil {
		t.Fatalf("ClusterRole not in the member: %v", err)
	}

	// Granted roles do not reach where Flotilla does not manage: the
	// admission policy refuses a Role in kube-system although RBAC allows
	// roles cluster-wide now.
	wantRefused(t, "a Role in kube-system after roles were granted", c.Create(ctx(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "escalates"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	}))
	// Kinds not propagated stay closed.
	wantRefused(t, "a ClusterRoleBinding, not propagated", c.Create(ctx(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "fleet-ops", Name: "default"}},
	}))
	wantRefused(t, "a webhook configuration, not propagated", c.Create(ctx(), webhook("fleet-intercepts")))
}

func TestHubIdentityIsGuardedByAnAdmissionPolicyOnItsUsername(t *testing.T) {
	// The member apiserver of this suite serves admissionregistration.k8s.io/v1
	// ValidatingAdmissionPolicy; the refusal for older members is the
	// unit test of servesAdmissionPolicies. Here: the policy is in place.
	createCluster(t, "enrol-guard", "guarded", clusterOpts{labels: enrolled})
	waitEnrolled(t, "guarded")
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "flotilla-hub"}, vap); err != nil {
		t.Fatalf("admission policy of the hub identity: %v", err)
	}
	if got := vap.Spec.MatchConditions; len(got) != 1 || !strings.Contains(got[0].Expression, "system:serviceaccount:flotilla-system:flotilla-hub") {
		t.Errorf("policy matches %v, want the hub identity's username", got)
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "flotilla-hub"}, b); err != nil || fmt.Sprint(b.Spec.ValidationActions) != "[Deny]" {
		t.Errorf("policy binding %v (%v), want Deny", b.Spec.ValidationActions, err)
	}
}

// TestAClusterResourceEnvelopesContentsApplyAsTheHubIdentity: the Work a
// ClusterResourceEnvelope renders — a webhook configuration, a CRD and a
// ConfigMap of a namespace the member does not have yet, in a
// ClusterResourceBinding's Work — is applied by the hub's scoped identity,
// which is granted those kinds for it; the same contents in a
// ResourceBinding's Work are refused (a tenant's envelope). It widens the
// identity that every member of this suite shares (one member apiserver),
// so it comes after the tests that expect webhook configurations refused.
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

func webhook(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://attacker.example/validate"
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "intercept.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
		}},
	}
}

// Works of one member applied at once, as the execution controller's
// workers do: eight of a namespace new to the member (each would create its
// RoleBinding) and four ClusterResourceBinding Works of four cluster-scoped
// kinds (each adds its kind to the one granted ClusterRole). Every one is
// applied at its first try, and the ClusterRole holds the four kinds.
func TestConcurrentGrantsOfOneMemberLoseNothing(t *testing.T) {
	createCluster(t, "enrol-concurrent", "concurrent", clusterOpts{labels: enrolled})
	waitEnrolled(t, "concurrent")
	a := pushApplier()
	// The first grant waits for the identity's admission policy to be in force.
	applyUntilApplied(t, "concurrent", pushWork(t, "concurrent", "first", "ResourceBinding",
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "warm-up", "name": "first"}}))

	var works []*workv1alpha1.Work
	for i := range 8 {
		works = append(works, pushWork(t, "concurrent", fmt.Sprintf("cm-%d", i), "ResourceBinding",
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "shared-new", "name": fmt.Sprintf("cm-%d", i)}}))
	}
	clusterScoped := []map[string]any{
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "concurrent-reader"}},
		{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": "concurrent-high"}, "value": 1000},
		{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": map[string]any{"name": "concurrent-fast"}, "provisioner": "example.com/fast"},
		{"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "concurrent-edge"}, "spec": map[string]any{"controller": "example.com/edge"}},
	}
	for i, o := range clusterScoped {
		works = append(works, pushWork(t, "concurrent", fmt.Sprintf("cluster-%d", i), "ClusterResourceBinding", o))
	}
	errs := make([]error, len(works))
	var wg sync.WaitGroup
	for i, w := range works {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Apply(ctx(), "concurrent", w); err != nil {
				errs[i] = err
			} else if !conditions.IsTrue(w, workv1alpha1.WorkApplied) {
				errs[i] = fmt.Errorf("Applied: %s", conditions.GetMessage(w, workv1alpha1.WorkApplied))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Work %s at its first try: %v", works[i].Name, err)
		}
	}
	granted := &rbacv1.ClusterRole{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "flotilla-hub-granted"}, granted); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, r := range granted.Rules {
		for _, res := range r.Resources {
			held[res] = true
		}
	}
	for _, want := range []string{"clusterroles", "priorityclasses", "storageclasses", "ingressclasses"} {
		if !held[want] {
			t.Errorf("granted ClusterRole lacks %s: %+v", want, granted.Rules)
		}
	}
}
