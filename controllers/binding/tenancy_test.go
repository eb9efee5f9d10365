package binding

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

func hubMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, meta.RESTScopeRoot)
	return m
}

func plaintext(path, value string) policyv1alpha1.OverridePolicy {
	return policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "attack"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{Overriders: policyv1alpha1.Overriders{
			Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: path, Operator: policyv1alpha1.OverriderOpReplace, Value: apiextensionsv1.JSON{Raw: []byte(value)}}},
		}}}},
	}
}

// TestRenderLeavesOutWhatTheTenancyRuleForbids: the binding controller
// applies the tenancy rule to the template after overrides, to each
// dependency after overrides and to an envelope's contents; what breaks it
// is left out with ForbiddenObject, the rest is rendered; a
// ClusterResourceBinding is not confined.
func TestRenderLeavesOutWhatTheTenancyRuleForbids(t *testing.T) {
	settings := object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {a: "1"}
`)
	secret := object(t, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
`)
	envelope := object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: bundle, namespace: shop, labels: {flotilla.io/envelope: "true"}}
data:
  a.yaml: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: admin}
  b.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: inside}
`)
	tests := []struct {
		name        string
		bindingKind string
		template    *unstructured.Unstructured
		deps        []*unstructured.Unstructured
		policies    []policyv1alpha1.OverridePolicy
		// want are the rendered objects as "<kind> <namespace>/<name>".
		want []string
		// failure is the ForbiddenObject message, "" for none.
		failure string
	}{
		{
			name:     "a template renamed by an override is left out, its dependency is rendered",
			template: settings, deps: []*unstructured.Unstructured{secret},
			policies: []policyv1alpha1.OverridePolicy{func() policyv1alpha1.OverridePolicy {
				p := plaintext("/metadata/name", `"other"`)
				p.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}
				return p
			}()},
			want:    []string{"Secret shop/creds"},
			failure: "v1 ConfigMap shop/other is not rendered: overrides may not change the apiVersion, kind or name of v1 ConfigMap shop/settings",
		},
		{
			name:     "a dependency moved to kube-system by an override is left out, the template is rendered",
			template: settings, deps: []*unstructured.Unstructured{secret},
			policies: []policyv1alpha1.OverridePolicy{func() policyv1alpha1.OverridePolicy {
				p := plaintext("/metadata/namespace", `"kube-system"`)
				p.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret"}}
				return p
			}()},
			want:    []string{"ConfigMap shop/settings"},
			failure: "v1 Secret kube-system/creds is not rendered: a ResourceBinding renders only into its own namespace shop",
		},
		{
			name:     "an envelope's cluster-scoped content is left out, the namespaced one goes into the binding's namespace",
			template: envelope,
			want:     []string{"ConfigMap shop/inside"},
			failure:  "rbac.authorization.k8s.io/v1 ClusterRoleBinding admin is not rendered: a ResourceBinding renders only namespaced objects",
		},
		{
			name:        "a ClusterResourceBinding renders what it carries",
			bindingKind: KindClusterResourceBinding, template: envelope,
			want: []string{"ClusterRoleBinding /admin", "ConfigMap /inside"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			member := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
			r := &Renderer{
				Client:     newFakeCache(hubscheme.New()).WithObjects(member).Build(),
				RESTMapper: hubMapper(),
			}
			kind := KindResourceBinding
			if tt.bindingKind != "" {
				kind = tt.bindingKind
			}
			b := NewBinding(kind)
			b.SetNamespace("shop")
			if kind == KindClusterResourceBinding {
				b.SetNamespace("")
			}
			b.SetName("binding")
			s := &rendering{
				key:     bindingKey{Kind: kind, ObjectKey: client.ObjectKeyFromObject(b)},
				binding: b, template: tt.template, deps: tt.deps, policies: tt.policies,
			}
			manifests, reason, err := r.render(context.Background(), s, workv1alpha1.TargetCluster{Name: "m1"})
			if err != nil {
				t.Fatalf("render: %s %v", reason, err)
			}
			var got []string
			for _, m := range manifests {
				u := &unstructured.Unstructured{}
				if err := json.Unmarshal(m.Raw, &u.Object); err != nil {
					t.Fatal(err)
				}
				got = append(got, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			switch {
			case tt.failure == "" && len(s.failures) > 0:
				t.Errorf("failures %+v, want none", s.failures)
			case tt.failure != "" && (len(s.failures) != 1 || s.failures[0].reason != workv1alpha1.BindingReasonForbiddenObject || !strings.HasPrefix(s.failures[0].message, tt.failure)):
				t.Errorf("failures %+v, want one ForbiddenObject starting %q", s.failures, tt.failure)
			}
		})
	}
}

// TestATemplateReferenceToAnotherNamespaceIsNotRead: a ResourceBinding
// whose spec.resource names another namespace (written around admission)
// renders nothing and reads nothing there; an empty namespace means the
// binding's own.
func TestATemplateReferenceToAnotherNamespaceIsNotRead(t *testing.T) {
	secret := object(t, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: other-tenant}
`)
	own := object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
`)
	hub := newFakeCache(hubscheme.New()).WithObjects(secret, own).Build()
	tests := []struct {
		name      string
		ref       workv1alpha1.ObjectReference
		proceed   bool
		reason    string
		message   string
		wantTempl string
	}{
		{
			name: "another namespace", ref: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: "other-tenant", Name: "creds"},
			reason:  workv1alpha1.BindingReasonTemplateOutsideNamespace,
			message: "spec.resource names Secret other-tenant/creds: a ResourceBinding renders only templates of its own namespace shop; nothing is rendered",
		},
		{
			name: "no namespace: the binding's own", ref: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"},
			proceed: true, wantTempl: "shop/settings",
		},
		{
			name: "its own namespace", ref: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
			proceed: true, wantTempl: "shop/settings",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Renderer{Client: hub, APIReader: hub, RESTMapper: hubMapper()}
			rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"}, Spec: workv1alpha1.ResourceBindingSpec{Resource: tt.ref}}
			s := &rendering{key: bindingKey{Kind: KindResourceBinding, ObjectKey: client.ObjectKeyFromObject(rb)}, binding: rb}
			proceed, err := r.readTemplate(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if proceed != tt.proceed {
				t.Fatalf("proceed %t, want %t (failures %+v)", proceed, tt.proceed, s.failures)
			}
			if !tt.proceed {
				if s.template != nil {
					t.Errorf("the other namespace's template was read: %v", s.template)
				}
				if len(s.failures) != 1 || s.failures[0].reason != tt.reason || s.failures[0].message != tt.message {
					t.Errorf("failures %+v, want %s %q", s.failures, tt.reason, tt.message)
				}
				return
			}
			if got := s.template.GetNamespace() + "/" + s.template.GetName(); got != tt.wantTempl {
				t.Errorf("template %s, want %s", got, tt.wantTempl)
			}
		})
	}
}
