package tenancy

import (
	"strings"
	"testing"
)

func TestNotFederatable(t *testing.T) {
	tests := []struct {
		namespace string
		// why is a part of the refusal, "" when the namespace may be federated.
		why string
	}{
		{"kube-system", "namespace kube-system cannot be federated (flotilla.io/federated=true): it holds the management cluster's own components"},
		{"kube-public", "kube-* namespaces are reserved by Kubernetes"},
		{"kube-node-lease", "kube-* namespaces are reserved by Kubernetes"},
		{"kube-anything", "kube-* namespaces are reserved by Kubernetes"},
		{"flotilla-system", "Flotilla itself runs there"},
		{"flotilla-es-member1", "flotilla-es-* namespaces hold members' Works"},
		{"default", ""},
		{"shop", ""},
		{"kubeflow", ""}, // not the kube- prefix
		{"flotilla-apps", ""},
	}
	for _, tt := range tests {
		got := NotFederatable(tt.namespace)
		if tt.why == "" {
			if got != "" {
				t.Errorf("NotFederatable(%s) = %q, want allowed", tt.namespace, got)
			}
			continue
		}
		if !strings.Contains(got, tt.why) || !strings.HasSuffix(got, "label a namespace of your own") {
			t.Errorf("NotFederatable(%s) = %q, want it to contain %q", tt.namespace, got, tt.why)
		}
	}
}
