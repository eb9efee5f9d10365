package applier

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// One rule for the hub identity (Push) and the agent (Pull).
func TestAllowedGrantsAResourceBindingItsNamespacesOnly(t *testing.T) {
	configMaps := Resource{GroupResource: schema.GroupResource{Resource: "configmaps"}, Namespaced: true}
	roles := Resource{GroupResource: schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}, Namespaced: true}
	priority := Resource{GroupResource: schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}}
	tests := []struct {
		name    string
		kind    string
		need    Need
		want    Grant
		refused bool
	}{
		{"namespaced objects of a ResourceBinding", "ResourceBinding",
			Need{Namespaces: []string{"shop"}, Resources: []Resource{configMaps}}, Grant{Namespaces: []string{"shop"}}, false},
		{"a reserved namespace", "ClusterResourceBinding",
			Need{Namespaces: []string{"kube-system"}, Resources: []Resource{configMaps}}, Grant{}, true},
		{"a cluster-scoped kind of a ResourceBinding", "ResourceBinding",
			Need{Resources: []Resource{priority}}, Grant{}, true},
		{"an RBAC kind of a ResourceBinding", "ResourceBinding",
			Need{Namespaces: []string{"shop"}, Resources: []Resource{roles}}, Grant{}, true},
		{"a cluster-scoped and an RBAC kind of a ClusterResourceBinding", "ClusterResourceBinding",
			Need{Namespaces: []string{"shop"}, Resources: []Resource{configMaps, roles, priority}},
			Grant{Namespaces: []string{"shop"}, Resources: []schema.GroupResource{roles.GroupResource, priority.GroupResource}}, false},
	}
	for _, tt := range tests {
		w := &workv1alpha1.Work{}
		w.Annotations = map[string]string{workv1alpha1.BindingKindAnnotation: tt.kind}
		got, err := Allowed(w, tt.need)
		if (err != nil) != tt.refused || !equality.Semantic.DeepEqual(got, tt.want) {
			t.Errorf("%s: Allowed = %+v, %v; want %+v, refused %v", tt.name, got, err, tt.want, tt.refused)
		}
	}
}
