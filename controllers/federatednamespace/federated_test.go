package federatednamespace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFederatedIgnoresTheLabelWhereItCannotBe(t *testing.T) {
	labelled := map[string]string{"flotilla.io/federated": "true"}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"shop", labelled, true},
		{"default", labelled, true},
		{"shop", nil, false},
		{"shop", map[string]string{"flotilla.io/federated": "false"}, false},
		{"kube-system", labelled, false},
		{"flotilla-system", labelled, false},
		{"flotilla-es-member1", labelled, false},
	}
	for _, tt := range tests {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Labels: tt.labels}}
		if got := Federated(ns); got != tt.want {
			t.Errorf("Federated(%s %v) = %t, want %t", tt.name, tt.labels, got, tt.want)
		}
	}
}
