package webhooks

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestResourceBindingTemplateReferenceStaysInItsNamespace(t *testing.T) {
	tests := []struct {
		templateNamespace string
		denied            bool
	}{
		{"", false},
		{"shop", false},
		{"other-tenant", true},
		{"kube-system", true},
	}
	for _, tt := range tests {
		rb := &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"},
			Spec:       workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: tt.templateNamespace, Name: "s"}},
		}
		_, err := (&ResourceBinding{}).ValidateCreate(context.Background(), rb)
		if (err != nil) != tt.denied {
			t.Fatalf("namespace %q: %v, denied want %t", tt.templateNamespace, err, tt.denied)
		}
		if tt.denied && !strings.Contains(err.Error(), `spec.resource.namespace: Invalid value: "`+tt.templateNamespace+`": must be empty or the binding's own namespace shop`) {
			t.Errorf("denial %q", err)
		}
	}
}
