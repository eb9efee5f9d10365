package detector

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestNeverTemplateSkipsWhatTheHubMadeAndWhatEveryMemberHas(t *testing.T) {
	controlled := metav1.ObjectMeta{Name: "web-5d8f", OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: ptr.To(true)}}}
	merelyOwned := metav1.ObjectMeta{Name: "cfg", OwnerReferences: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "other"}}}
	tests := []struct {
		name string
		gvk  schema.GroupVersionKind
		meta metav1.ObjectMeta
		want bool
	}{
		{"a ReplicaSet the hub's Deployment controller made", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, controlled, true},
		{"an object owned but not controlled", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, merelyOwned, false},
		{"the inert quota", schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}, metav1.ObjectMeta{Name: "flotilla-inert"}, true},
		{"another quota", schema.GroupVersionKind{Version: "v1", Kind: "ResourceQuota"}, metav1.ObjectMeta{Name: "team"}, false},
		{"kube-root-ca.crt", schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, metav1.ObjectMeta{Name: "kube-root-ca.crt"}, true},
		{"the default ServiceAccount", schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, metav1.ObjectMeta{Name: "default"}, true},
		{"a ServiceAccount named default of another group", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "ServiceAccount"}, metav1.ObjectMeta{Name: "default"}, false},
		{"an ordinary Deployment", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, metav1.ObjectMeta{Name: "web"}, false},
	}
	for _, tt := range tests {
		if got := neverTemplate(tt.gvk, &tt.meta); got != tt.want {
			t.Errorf("%s: neverTemplate = %v, want %v", tt.name, got, tt.want)
		}
	}
}
