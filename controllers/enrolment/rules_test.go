package enrolment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestHashedNameIsStableUniqueAndFitsTheExecutionNamespace(t *testing.T) {
	tests := []struct {
		namespace, name, want string
	}{
		{"team-a", "prod", "prod-" + sha8("team-a/prod")},
		{"team-b", "prod", "prod-" + sha8("team-b/prod")},
		// 63-character Cluster name: cut to 42 so that flotilla-es-<member> is a DNS label.
		{"ns", strings.Repeat("a", 63), strings.Repeat("a", 42) + "-" + sha8("ns/"+strings.Repeat("a", 63))},
		// Dots are not DNS-label characters.
		{"ns", "eu.prod", "eu-prod-" + sha8("ns/eu.prod")},
		// A cut that ends on a dash does not leave a double dash.
		{"ns", strings.Repeat("a", 41) + "-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", strings.Repeat("a", 41) + "-" + sha8("ns/"+strings.Repeat("a", 41)+"-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")},
	}
	for _, tt := range tests {
		got := hashedName(tt.namespace, tt.name)
		if got != tt.want {
			t.Errorf("hashedName(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
		if err := validateMemberName(got); err != nil {
			t.Errorf("hashedName(%q, %q) = %q is not a valid member name: %v", tt.namespace, tt.name, got, err)
		}
	}
}

// sha8 is the first 8 hex digits of sha256(s).
func sha8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestValidateMemberName(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"prod", true},
		{strings.Repeat("a", 51), true},
		{strings.Repeat("a", 52), false}, // flotilla-es-<52 chars> is 64 characters
		{"Prod", false},
		{"eu.prod", false},
		{"-prod", false},
	}
	for _, tt := range tests {
		if err := validateMemberName(tt.name); (err == nil) != tt.valid {
			t.Errorf("validateMemberName(%q) = %v, want valid=%v", tt.name, err, tt.valid)
		}
	}
}

func TestPlacementIsDerivedFromTheCluster(t *testing.T) {
	cluster := func(labels map[string]string, group, kind string, fds ...string) *capiv1.Cluster {
		c := &capiv1.Cluster{}
		c.Labels = labels
		c.Spec.InfrastructureRef = capiv1.ContractVersionedObjectReference{APIGroup: group, Kind: kind, Name: "x"}
		for _, fd := range fds {
			c.Status.FailureDomains = append(c.Status.FailureDomains, capiv1.FailureDomain{Name: fd})
		}
		return c
	}
	infra := "infrastructure.cluster.x-k8s.io"
	tests := []struct {
		name    string
		cluster *capiv1.Cluster
		want    placement
	}{
		{"labels win", cluster(map[string]string{"flotilla.io/provider": "aws", "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a"}, infra, "DockerCluster"),
			placement{Provider: "aws", Region: "eu-west-1", Zone: "eu-west-1a", Zones: []string{"eu-west-1a"}}},
		{"provider from the infrastructure kind", cluster(nil, infra, "DockerCluster"), placement{Provider: "docker"}},
		{"managed kinds name their provider", cluster(nil, infra, "AWSManagedCluster"), placement{Provider: "aws"}},
		{"a non-CAPI group gives no provider", cluster(nil, "example.com", "FooCluster"), placement{}},
		{"a kind without the Cluster suffix gives no provider", cluster(nil, infra, "Machine"), placement{}},
		{"failure domains are the zones, sorted", cluster(nil, infra, "VSphereCluster", "fd-b", "fd-a"), placement{Provider: "vsphere", Zones: []string{"fd-a", "fd-b"}}},
		{"a single failure domain is the zone", cluster(nil, infra, "GCPCluster", "europe-west1-b"), placement{Provider: "gcp", Zone: "europe-west1-b", Zones: []string{"europe-west1-b"}}},
		{"a zone that cannot be a label value is dropped", cluster(map[string]string{"topology.kubernetes.io/zone": ""}, infra, "DockerCluster", "zone a"), placement{Provider: "docker", Zones: []string{"zone a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placementOf(tt.cluster)
			if got.Provider != tt.want.Provider || got.Region != tt.want.Region || got.Zone != tt.want.Zone || !slices.Equal(got.Zones, tt.want.Zones) {
				t.Errorf("placementOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestApplyPlacementKeepsLabelsItDoesNotOwn(t *testing.T) {
	c := &capiv1.Cluster{}
	c.Labels = map[string]string{"flotilla.io/provider": "aws", "member.flotilla.io/tier": "gold", "flotilla.io/enroll": "true", "team": "payments"}
	m := &clusterv1alpha1.MemberCluster{}
	m.Labels = map[string]string{"member.flotilla.io/old": "gone", "topology.kubernetes.io/region": "stale", "set-by-hand": "kept"}

	applyPlacement(m, c)

	want := map[string]string{"flotilla.io/provider": "aws", "member.flotilla.io/tier": "gold", "set-by-hand": "kept"}
	if fmt.Sprint(m.Labels) != fmt.Sprint(want) {
		t.Errorf("member labels = %v, want %v", m.Labels, want)
	}
}

func TestNamespacedRulesGrantTopLevelNamespacedResourcesWithoutRBACOrEscalatingVerbs(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true}, {Name: "pods/exec", Namespaced: true}, {Name: "pods/log", Namespaced: true},
			{Name: "secrets", Namespaced: true}, {Name: "serviceaccounts", Namespaced: true}, {Name: "serviceaccounts/token", Namespaced: true},
			{Name: "bindings", Namespaced: true}, {Name: "nodes"}, {Name: "nodes/proxy"}, {Name: "namespaces"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true}, {Name: "deployments/scale", Namespaced: true}}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "clusterrolebindings"}, {Name: "roles", Namespaced: true}}},
		{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "validatingwebhookconfigurations"}}},
		{GroupVersion: "autoscaling/v1", APIResources: []metav1.APIResource{{Name: "horizontalpodautoscalers", Namespaced: true}}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{{Name: "horizontalpodautoscalers", Namespaced: true}}},
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "secrets", "serviceaccounts"}, Verbs: verbs},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: verbs},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: verbs},
	}
	got := namespacedRules(lists)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hubRules =\n%v\nwant\n%v", got, want)
	}
	if rulesHash(got) != rulesHash(namespacedRules(lists)) {
		t.Error("rulesHash is not deterministic")
	}
	lists[1].APIResources = append(lists[1].APIResources, metav1.APIResource{Name: "statefulsets", Namespaced: true})
	if rulesHash(got) == rulesHash(namespacedRules(lists)) {
		t.Error("rulesHash did not change when the member started serving a new resource")
	}
	if err := servesAdmissionPolicies(lists); err == nil {
		t.Error("a member without ValidatingAdmissionPolicy was accepted")
	}
	lists = append(lists, &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}})
	if err := servesAdmissionPolicies(lists); err != nil {
		t.Errorf("a member serving ValidatingAdmissionPolicy was refused: %v", err)
	}
}

func TestGrantedRBACKindsComeWithTheVerbThatWritesThemAsPropagated(t *testing.T) {
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	got := grantedRules([]schema.GroupResource{
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	})
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: verbs},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: append(slices.Clone(verbs), "escalate")},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: append(slices.Clone(verbs), "bind")},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("grantedRules =\n%v\nwant\n%v", got, want)
	}
	if back := grantedResources(got); len(back) != 3 {
		t.Errorf("grantedResources(grantedRules(3 kinds)) = %v", back)
	}
}
