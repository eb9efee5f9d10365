package tenancy

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// hubScopes maps the kinds the tests use as a hub would.
func hubScopes() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot},
	} {
		m.Add(k.gvk, k.scope)
	}
	return m
}

func obj(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

type failingScopes struct{}

func (failingScopes) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("discovery: connection refused")
}

func TestConfineKeepsAResourceBindingInsideItsNamespace(t *testing.T) {
	web := &Identity{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	tests := []struct {
		name string
		keep *Identity
		obj  *unstructured.Unstructured
		// want is the violation's message, "" when obj may be rendered.
		want string
		// namespace is obj's namespace afterwards.
		namespace string
	}{
		{
			name: "the template as it is",
			keep: web, obj: obj("apps/v1", "Deployment", "shop", "web"), namespace: "shop",
		},
		{
			name: "the template renamed by an override",
			keep: web, obj: obj("apps/v1", "Deployment", "shop", "web-admin"),
			want: "apps/v1 Deployment shop/web-admin is not rendered: overrides may not change the apiVersion, kind or name of apps/v1 Deployment shop/web",
		},
		{
			name: "the template turned into another kind by an override",
			keep: web, obj: obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "web"),
			want: "rbac.authorization.k8s.io/v1 ClusterRoleBinding web is not rendered: overrides may not change the apiVersion, kind or name of apps/v1 Deployment shop/web",
		},
		{
			name: "the template's apiVersion changed by an override",
			keep: web, obj: obj("apps/v1beta2", "Deployment", "shop", "web"),
			want: "apps/v1beta2 Deployment shop/web is not rendered: overrides may not change the apiVersion, kind or name of apps/v1 Deployment shop/web",
		},
		{
			name: "the template moved into kube-system by an override",
			keep: web, obj: obj("apps/v1", "Deployment", "kube-system", "web"),
			want: "apps/v1 Deployment kube-system/web is not rendered: a ResourceBinding renders only into its own namespace shop; another namespace is reached only through a ClusterPropagationPolicy",
		},
		{
			name: "an envelope's Secret in the binding's namespace",
			obj:  obj("v1", "Secret", "shop", "creds"), namespace: "shop",
		},
		{
			name: "an envelope's ConfigMap that names no namespace goes into the binding's",
			obj:  obj("v1", "ConfigMap", "", "settings"), namespace: "shop",
		},
		{
			name: "an envelope's ClusterRoleBinding",
			obj:  obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "tenant-is-cluster-admin"),
			want: "rbac.authorization.k8s.io/v1 ClusterRoleBinding tenant-is-cluster-admin is not rendered: a ResourceBinding renders only namespaced objects; a cluster-scoped kind travels only through a ClusterPropagationPolicy",
		},
		{
			name: "an envelope's cluster-scoped object that names a namespace anyway",
			obj:  obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "shop", "hook"),
			want: "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration shop/hook is not rendered: a ResourceBinding renders only namespaced objects; a cluster-scoped kind travels only through a ClusterPropagationPolicy",
		},
		{
			name: "an envelope's CustomResourceDefinition",
			obj:  obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "things.example.com"),
			want: "apiextensions.k8s.io/v1 CustomResourceDefinition things.example.com is not rendered: a ResourceBinding renders only namespaced objects; a cluster-scoped kind travels only through a ClusterPropagationPolicy",
		},
		{
			name: "an envelope's DaemonSet in kube-system",
			obj:  obj("apps/v1", "DaemonSet", "kube-system", "miner"),
			want: "apps/v1 DaemonSet kube-system/miner is not rendered: a ResourceBinding renders only into its own namespace shop; another namespace is reached only through a ClusterPropagationPolicy",
		},
		{
			name: "an envelope's Namespace",
			obj:  obj("v1", "Namespace", "", "other-tenant"),
			want: "v1 Namespace other-tenant is not rendered: a ResourceBinding renders only namespaced objects; a cluster-scoped kind travels only through a ClusterPropagationPolicy",
		},
		{
			name: "a kind the hub does not serve",
			obj:  obj("example.com/v1", "Gadget", "shop", "g"),
			want: "example.com/v1 Gadget shop/g is not rendered: the hub does not serve this kind, so its scope is unknown; a ResourceBinding renders only kinds whose scope the hub knows",
		},
		{
			name: "a version the hub does not serve of a known group",
			obj:  obj("apps/v9", "Deployment", "shop", "web"),
			want: "apps/v9 Deployment shop/web is not rendered: the hub does not serve this kind, so its scope is unknown; a ResourceBinding renders only kinds whose scope the hub knows",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Confine(hubScopes(), "shop", tt.keep, tt.obj)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Confine: %v, want nil", err)
				}
				if got := tt.obj.GetNamespace(); got != tt.namespace {
					t.Errorf("namespace %q, want %q", got, tt.namespace)
				}
				return
			}
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("Confine: %v, want a *Violation", err)
			}
			if err.Error() != tt.want {
				t.Errorf("message\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestConfineReportsAFailingDiscoveryAsTransient(t *testing.T) {
	err := Confine(failingScopes{}, "shop", nil, obj("v1", "ConfigMap", "shop", "settings"))
	var v *Violation
	if err == nil || errors.As(err, &v) {
		t.Fatalf("Confine: %v, want an error that is not a *Violation", err)
	}
}
