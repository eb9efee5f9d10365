package policymatch

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// web is the template most cases match: Deployment fleet/web, app=web.
var web = Template{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "fleet", Name: "web", Labels: map[string]string{"app": "web"}}

func byKind() policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"}
}

func byName(name string) policyv1alpha1.ResourceSelector {
	s := byKind()
	s.Name = name
	return s
}

func byLabel(key, value string) policyv1alpha1.ResourceSelector {
	s := byKind()
	s.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: value}}
	return s
}

func inNamespace(ns string, s policyv1alpha1.ResourceSelector) policyv1alpha1.ResourceSelector {
	s.Namespace = ns
	return s
}

// pp is a PropagationPolicy in namespace fleet unless named "ns/name".
func pp(name string, priority int32, selectors ...policyv1alpha1.ResourceSelector) Policy {
	ns := "fleet"
	if i := strings.IndexByte(name, '/'); i >= 0 {
		ns, name = name[:i], name[i+1:]
	}
	return Policy{
		Ref:  Ref{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: &policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Priority: ptr.To(priority)},
	}
}

func cpp(name string, priority int32, selectors ...policyv1alpha1.ResourceSelector) Policy {
	return Policy{
		Ref:  Ref{Cluster: true, Name: name, UID: types.UID("uid-" + name)},
		Spec: &policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Priority: ptr.To(priority)},
	}
}

func TestChooseAppliesKarmadasPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		template  Template
		claimedBy *Ref
		policies  []Policy
		want      string // Ref.String() of the winner, "" for none
	}{
		{
			name:     "no policy selects the template",
			template: web,
			policies: []Policy{pp("other", 0, byName("api"))},
			want:     "",
		},
		{
			name:     "a PropagationPolicy wins over a ClusterPropagationPolicy of higher priority and more specific selector",
			template: web,
			policies: []Policy{cpp("global", 100, byName("web")), pp("local", 0, byKind())},
			want:     "PropagationPolicy fleet/local",
		},
		{
			name:     "higher explicit priority wins over a more specific selector",
			template: web,
			policies: []Policy{pp("by-name", 0, byName("web")), pp("by-kind", 5, byKind())},
			want:     "PropagationPolicy fleet/by-kind",
		},
		{
			name:     "same priority: a name selector wins over a labelSelector",
			template: web,
			policies: []Policy{pp("a-label", 1, byLabel("app", "web")), pp("z-name", 1, byName("web"))},
			want:     "PropagationPolicy fleet/z-name",
		},
		{
			name:     "same priority: a labelSelector wins over kind only",
			template: web,
			policies: []Policy{pp("a-kind", 0, byKind()), pp("b-label", 0, byLabel("app", "web"))},
			want:     "PropagationPolicy fleet/b-label",
		},
		{
			name:     "a policy counts its most specific matching selector",
			template: web,
			policies: []Policy{pp("a-label", 0, byLabel("app", "web")), pp("b-kind-and-name", 0, byKind(), byName("web"))},
			want:     "PropagationPolicy fleet/b-kind-and-name",
		},
		{
			name:     "full tie: name ascending",
			template: web,
			policies: []Policy{pp("beta", 0, byKind()), pp("alpha", 0, byKind())},
			want:     "PropagationPolicy fleet/alpha",
		},
		{
			name:     "unset priority counts as 0, below 1",
			template: web,
			policies: []Policy{{Ref: Ref{Namespace: "fleet", Name: "a-unset"}, Spec: &policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{byName("web")}}}, pp("b-one", 1, byKind())},
			want:     "PropagationPolicy fleet/b-one",
		},
		{
			name:     "negative priority loses to the default",
			template: web,
			policies: []Policy{pp("a-neg", -1, byName("web")), pp("b-zero", 0, byKind())},
			want:     "PropagationPolicy fleet/b-zero",
		},
		{
			name:     "between ClusterPropagationPolicies the same order applies",
			template: web,
			policies: []Policy{cpp("a-kind", 0, byKind()), cpp("b-name", 0, byName("web")), cpp("c-label", 0, byLabel("app", "web"))},
			want:     "ClusterPropagationPolicy b-name",
		},
		{
			name:      "a claimed template keeps its policy although a policy of higher precedence selects it",
			template:  web,
			claimedBy: &Ref{Cluster: true, Name: "global", UID: "uid-global"},
			policies:  []Policy{cpp("global", 0, byKind()), pp("local", 10, byName("web"))},
			want:      "ClusterPropagationPolicy global",
		},
		{
			name:      "a claiming policy that no longer selects the template gives it up",
			template:  web,
			claimedBy: &Ref{Namespace: "fleet", Name: "old", UID: "uid-old"},
			policies:  []Policy{pp("old", 10, byName("api")), pp("new", 0, byKind())},
			want:      "PropagationPolicy fleet/new",
		},
		{
			name:      "a deleted claiming policy gives the template to the next in precedence",
			template:  web,
			claimedBy: &Ref{Namespace: "fleet", Name: "gone", UID: "uid-gone"},
			policies:  []Policy{cpp("global", 0, byKind())},
			want:      "ClusterPropagationPolicy global",
		},
		{
			name:      "a policy re-created under the same name (new UID) claims anew, by precedence",
			template:  web,
			claimedBy: &Ref{Namespace: "fleet", Name: "low", UID: "uid-previous-incarnation"},
			policies:  []Policy{pp("low", 0, byKind()), pp("high", 1, byKind())},
			want:      "PropagationPolicy fleet/high",
		},
		{
			name:     "a PropagationPolicy of another namespace never selects, whatever its selector's namespace",
			template: web,
			policies: []Policy{pp("other/p", 0, inNamespace("fleet", byName("web")))},
			want:     "",
		},
		{
			name:     "a PropagationPolicy ignores its selector's namespace field",
			template: web,
			policies: []Policy{pp("p", 0, inNamespace("elsewhere", byName("web")))},
			want:     "PropagationPolicy fleet/p",
		},
		{
			name:     "a ClusterPropagationPolicy selector with a namespace selects that namespace only",
			template: web,
			policies: []Policy{cpp("a-elsewhere", 0, inNamespace("elsewhere", byKind())), cpp("b-fleet", 0, inNamespace("fleet", byKind()))},
			want:     "ClusterPropagationPolicy b-fleet",
		},
		{
			name:     "a cluster-scoped template is selected by ClusterPropagationPolicies only",
			template: Template{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader"},
			policies: []Policy{
				pp("p", 0, policyv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}),
				cpp("c", 0, policyv1alpha1.ResourceSelector{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"}),
			},
			want: "ClusterPropagationPolicy c",
		},
		{
			name:     "a name selector ignores a labelSelector that would not match",
			template: web,
			policies: []Policy{pp("p", 0, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}})},
			want:     "PropagationPolicy fleet/p",
		},
		{
			name:     "apiVersion must match exactly",
			template: web,
			policies: []Policy{pp("p", 0, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1beta1", Kind: "Deployment"})},
			want:     "",
		},
		{
			name:     "a labelSelector that does not match selects nothing",
			template: web,
			policies: []Policy{pp("p", 0, byLabel("app", "api"))},
			want:     "",
		},
		{
			name:     "an invalid labelSelector selects nothing and does not stop other policies",
			template: web,
			policies: []Policy{
				pp("a-broken", 9, policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}}),
				pp("b-fine", 0, byKind()),
			},
			want: "PropagationPolicy fleet/b-fine",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Choose(tt.template, tt.claimedBy, tt.policies)
			gotName := ""
			if got != nil {
				gotName = got.Ref.String()
			}
			if gotName != tt.want {
				t.Errorf("Choose = %q, want %q", gotName, tt.want)
			}
			// The order of the input never changes the result.
			reversed := make([]Policy, len(tt.policies))
			for i, p := range tt.policies {
				reversed[len(tt.policies)-1-i] = p
			}
			again := Choose(tt.template, tt.claimedBy, reversed)
			if (again == nil) != (got == nil) || (got != nil && again.Ref != got.Ref) {
				t.Errorf("Choose over the reversed list = %v, want %v", again, got)
			}
		})
	}
}

func TestSelectsReportsAnInvalidSelectorWithItsPosition(t *testing.T) {
	p := pp("p", 0, byName("api"), policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}})
	s, err := Selects(&p, web)
	if s != NotSelected {
		t.Errorf("Selects = %v, want NotSelected", s)
	}
	want := `PropagationPolicy fleet/p resourceSelectors[1]: labelSelector: "Near" is not a valid label selector operator`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}
