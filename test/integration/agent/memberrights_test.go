package agent_test

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// agentInMemberClient is a member client authenticated as the agent's
// ServiceAccount: the requests below are real, answered by the member's
// RBAC and admission.
func agentInMemberClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(agentInMember, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bindingWork is a Work of the edge member as the binding controller
// renders it for a binding of kind (ResourceBinding or ClusterResourceBinding).
func bindingWork(t *testing.T, name, kind string, objs ...map[string]any) *workv1alpha1.Work {
	t.Helper()
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-es-" + edge, Name: name,
		Annotations: map[string]string{workv1alpha1.BindingKindAnnotation: kind}}}
	for _, o := range objs {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, o))
	}
	if err := hub.Client.Create(ctx(), w); err != nil {
		t.Fatalf("create Work %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), w) })
	return w
}

func refusedAsAgent(t *testing.T, what string, err error, says string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("the agent must not %s in its member; got %v", what, err)
		return
	}
	if says != "" && !strings.Contains(err.Error(), says) {
		t.Errorf("%s: refused with %q, want it to say %q", what, err, says)
	}
}

func TestAgentInTheMemberWritesOnlyInManagedNamespacesAndCannotEscalate(t *testing.T) {
	w := bindingWork(t, "granted", "ResourceBinding", configMap("granted", "settings", "v1"))
	eventually(t, "the Work applied once its namespace was granted through the ClusterResourceSet", func() error {
		return conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})
	ns := &corev1.Namespace{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "granted"}, ns); err != nil || ns.Labels["flotilla.io/managed-namespace"] != "true" {
		t.Errorf("namespace granted in the member: %v, labels %v, want flotilla.io/managed-namespace=true", err, ns.Labels)
	}

	c := agentInMemberClient(t)
	// In the managed namespace it writes what Works carry.
	if err := c.Create(ctx(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "granted", Name: "direct"}}); err != nil {
		t.Errorf("the agent creates a ConfigMap in its managed namespace: %v", err)
	}
	_ = memberAdmin.Delete(ctx(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "granted", Name: "direct"}})

	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escape"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	tokenFor := func(ns, sa string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minted", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	refusedAsAgent(t, "mint a token Secret for another ServiceAccount, even in its managed namespace",
		c.Create(ctx(), tokenFor("granted", "default")), "service-account-token")
	refusedAsAgent(t, "mint a token Secret in kube-system", c.Create(ctx(), tokenFor("kube-system", "default")), "")
	refusedAsAgent(t, "create a Pod in kube-system", c.Create(ctx(), pod("kube-system")), "")
	refusedAsAgent(t, "create a Pod in a namespace Flotilla does not manage", c.Create(ctx(), pod("default")), "")
	refusedAsAgent(t, "read kube-system's Secrets", c.List(ctx(), &corev1.SecretList{}, client.InNamespace("kube-system")), "")
	refusedAsAgent(t, "read Secrets of all namespaces", c.List(ctx(), &corev1.SecretList{}), "")
	refusedAsAgent(t, "bind cluster-admin cluster-wide", c.Create(ctx(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-escape"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-agent"}},
	}), "")
	refusedAsAgent(t, "bind cluster-admin in its managed namespace", c.Create(ctx(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "granted", Name: "agent-escape"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-agent"}},
	}), "")
	refusedAsAgent(t, "write a webhook configuration", c.Create(ctx(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-escape"},
	}), "")
	refusedAsAgent(t, "delete its own admission policy", c.Delete(ctx(), &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-agent"}}), "")
	refusedAsAgent(t, "label a namespace managed", c.Patch(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"flotilla.io/managed-namespace":"true"}}}`))), "")
}

func TestAPullWorkWaitsForItsGrantReportingTheMembersRefusal(t *testing.T) {
	release := edgeResourceSet.hold()
	defer release()
	w := bindingWork(t, "late", "ResourceBinding", configMap("late", "settings", "v1"))
	eventually(t, "Applied=False with the member's Forbidden message while the grant has not arrived", func() error {
		if err := conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonApplyFailed); err != nil {
			return err
		}
		if m := conditions.GetMessage(w, workv1alpha1.WorkApplied); !strings.Contains(m, "forbidden") {
			return fmt.Errorf("Applied message %q, want the member's refusal", m)
		}
		return nil
	})
	release()
	eventually(t, "the Work applied once the ClusterResourceSet delivered the grant", func() error {
		return conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})
	if err := valueIs("late", "settings", "v1")(); err != nil {
		t.Error(err)
	}
}

func TestOnlyAClusterResourceBindingsWorkGrantsTheAgentItsClusterScopedKind(t *testing.T) {
	priorityClass := func(name string) map[string]any {
		return map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": map[string]any{"name": name}, "value": 1000}
	}
	c := agentInMemberClient(t)

	tenant := bindingWork(t, "tenant-priority", "ResourceBinding", priorityClass("tenant-priority"))
	eventually(t, "a ResourceBinding's cluster-scoped kind refused: Applied=False AccessRefused", func() error {
		return conditionIs(tenant, workv1alpha1.WorkApplied, metav1.ConditionFalse, applier.AccessRefusedReason)
	})
	refusedAsAgent(t, "create a PriorityClass no ClusterPropagationPolicy propagates",
		c.Create(ctx(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "agent-own"}, Value: 1}), "")
	refusedAsAgent(t, "create a ClusterRole no ClusterPropagationPolicy propagates",
		c.Create(ctx(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-own"}}), "")

	admin := bindingWork(t, "admin-priority", "ClusterResourceBinding", priorityClass("admin-priority"))
	eventually(t, "a ClusterResourceBinding's cluster-scoped kind granted and applied", func() error {
		return conditionIs(admin, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Name: "admin-priority"}, &schedulingv1.PriorityClass{}); err != nil {
		t.Errorf("the propagated PriorityClass in the member: %v", err)
	}
	if err := conditionIs(tenant, workv1alpha1.WorkApplied, metav1.ConditionFalse, applier.AccessRefusedReason); err != nil {
		t.Errorf("the ResourceBinding's Work after the grant: %v", err)
	}
	refusedAsAgent(t, "create a ClusterRole after a PriorityClass was granted",
		c.Create(ctx(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent-own"}}), "")
	t.Cleanup(func() {
		_ = memberAdmin.Delete(ctx(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "admin-priority"}})
	})
}
