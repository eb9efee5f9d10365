package applier

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// What a Work may need of the identity that applies it in a member — the
// hub's in a Push-mode member, flotilla-agent's in a Pull-mode one. The rule
// is the same whoever grants it (controllers/enrolment: directly for Push,
// through the agent's ClusterResourceSet for Pull):
//
//   - a namespaced object: its namespace, which becomes a managed namespace
//     of the member — never one of ReservedNamespaces;
//   - a cluster-scoped kind, or a kind of SensitiveGroups (RBAC, admission):
//     only for a Work of a ClusterResourceBinding (a cluster admin's
//     ClusterPropagationPolicy). A ResourceBinding's Work never widens the
//     identity beyond its namespaces.

// ReservedNamespaces are never managed: no member identity writes there.
var ReservedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", "flotilla-system"}

// SensitiveGroups are the API groups whose kinds grant power (RBAC,
// admission webhooks and policies): an identity writes them only when a
// ClusterResourceBinding propagates the kind.
var SensitiveGroups = []string{rbacv1.GroupName, admissionregistrationv1.GroupName}

// Grant is what a Work may be given: namespaces to manage, and the
// cluster-scoped or sensitive kinds to hold cluster-wide.
type Grant struct {
	Namespaces []string
	Resources  []schema.GroupResource
}

// Allowed says what w may be granted of need, or why not: the error wraps
// ErrAccessRefused.
func Allowed(w *workv1alpha1.Work, need Need) (Grant, error) {
	clusterWide := w.Annotations[workv1alpha1.BindingKindAnnotation] == "ClusterResourceBinding"
	var g Grant
	for _, ns := range need.Namespaces {
		if slices.Contains(ReservedNamespaces, ns) {
			return Grant{}, fmt.Errorf("namespace %s: %w: Flotilla never writes in %v of a member", ns, ErrAccessRefused, ReservedNamespaces)
		}
		g.Namespaces = append(g.Namespaces, ns)
	}
	for _, r := range need.Resources {
		if r.Namespaced && !slices.Contains(SensitiveGroups, r.Group) {
			continue // the namespace's RoleBinding covers it
		}
		if !clusterWide {
			return Grant{}, fmt.Errorf("%s: %w: only a ClusterPropagationPolicy propagates cluster-scoped, RBAC or admission kinds", r.GroupResource, ErrAccessRefused)
		}
		if !slices.Contains(g.Resources, r.GroupResource) {
			g.Resources = append(g.Resources, r.GroupResource)
		}
	}
	return g, nil
}

// Confined is the Access of an identity whose rights are granted elsewhere
// (flotilla-agent's, through its ClusterResourceSet): it grants nothing and
// refuses what Allowed refuses, so that such a Work says why.
type Confined struct{}

// Grant implements Access.
func (Confined) Grant(_ context.Context, _ string, w *workv1alpha1.Work, need Need) error {
	_, err := Allowed(w, need)
	return err
}

// NeedOf is what a Work's objects require of an identity, with mapper
// telling the kinds' scopes (the member's, or the hub's for a member the
// hub does not reach). Manifests mapper cannot map are left out, and then
// complete is false: the need may grow once their kinds are served.
func NeedOf(mapper meta.RESTMapper, w *workv1alpha1.Work) (need Need, complete bool) {
	return needOf(target{mapper: mapper}, w)
}
