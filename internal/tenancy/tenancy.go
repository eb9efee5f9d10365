// Package tenancy holds the rule that confines a namespaced binding to its
// namespace: everything rendered from a ResourceBinding — the template after
// overrides, its dependencies, the contents of an envelope — is a namespaced
// object in the binding's own namespace, and the template and its
// dependencies keep their identity (apiVersion, kind, name). A tenant who
// administers one federated namespace reaches nothing beyond it through
// Flotilla; cluster-scoped and cross-namespace objects travel only through a
// ClusterResourceBinding, which is a cluster admin's ClusterPropagationPolicy.
//
// Which hub namespaces may be federated at all is here too (NotFederatable).
//
// Whether a kind is namespaced is the hub's REST mapping. A kind the hub
// does not serve has no known scope and is refused: the rule cannot be
// decided for it, and a member-only kind could be cluster-scoped.
package tenancy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Rules, as the messages of violations state them.
const (
	RuleNamespaced    = "a ResourceBinding renders only namespaced objects; a cluster-scoped kind travels only through a ClusterPropagationPolicy"
	RuleOwnNamespace  = "a ResourceBinding renders only into its own namespace %s; another namespace is reached only through a ClusterPropagationPolicy"
	RuleUnknownScope  = "the hub does not serve this kind, so its scope is unknown; a ResourceBinding renders only kinds whose scope the hub knows"
	RuleKeepsIdentity = "overrides may not change the apiVersion, kind or name of %s"
)

// Identity names an object: apiVersion, kind, namespace and name.
type Identity struct {
	APIVersion, Kind, Namespace, Name string
}

// IdentityOf is obj's identity.
func IdentityOf(obj *unstructured.Unstructured) Identity {
	return Identity{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String is "<apiVersion> <kind> <namespace>/<name>", or without the
// namespace part for an object that names none.
func (i Identity) String() string {
	name := i.Name
	if i.Namespace != "" {
		name = i.Namespace + "/" + name
	}
	return i.APIVersion + " " + i.Kind + " " + name
}

// Violation is an object that may not be rendered from a ResourceBinding,
// and the rule it breaks.
type Violation struct {
	Object Identity
	Rule   string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("%s is not rendered: %s", v.Object, v.Rule)
}

// Scopes tells a kind's REST mapping: the hub's RESTMapper.
type Scopes interface {
	RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error)
}

// Confine checks obj, about to be rendered from a ResourceBinding of
// namespace, against the rule. keep, when not nil, is the identity obj had
// on the hub before overrides (a template, a dependency): its apiVersion,
// kind and name must be unchanged. An object of a namespaced kind that
// names no namespace (an envelope's manifest) is put into namespace.
//
// The error is a *Violation when obj may not be rendered, and any other
// error when its scope could not be told (discovery failing): transient.
func Confine(scopes Scopes, namespace string, keep *Identity, obj *unstructured.Unstructured) error {
	got := IdentityOf(obj)
	if keep != nil && (got.APIVersion != keep.APIVersion || got.Kind != keep.Kind || got.Name != keep.Name) {
		return &Violation{Object: got, Rule: fmt.Sprintf(RuleKeepsIdentity, *keep)}
	}
	gvk := obj.GroupVersionKind()
	mapping, err := scopes.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return &Violation{Object: got, Rule: RuleUnknownScope}
	}
	if err != nil {
		return fmt.Errorf("scope of %s: %w", gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return &Violation{Object: got, Rule: RuleNamespaced}
	}
	switch got.Namespace {
	case namespace:
	case "":
		obj.SetNamespace(namespace)
	default:
		return &Violation{Object: got, Rule: fmt.Sprintf(RuleOwnNamespace, namespace)}
	}
	return nil
}
