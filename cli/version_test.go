package cli

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestManagerVersionPrefersTheFlagItRunsWithThenTheImageTag(t *testing.T) {
	deployment := func(cs ...corev1.Container) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Spec.Containers = cs
		return d
	}
	tests := []struct {
		name        string
		d           *appsv1.Deployment
		version, by string
	}{
		{"flag with =", deployment(corev1.Container{Name: "manager", Image: "r/flotilla-manager:v1", Args: []string{"--v=0", "--flotilla-version=v1.1"}}), "v1.1", "--flotilla-version"},
		{"flag and value apart", deployment(corev1.Container{Name: "manager", Args: []string{"--flotilla-version", "v1.2"}}), "v1.2", "--flotilla-version"},
		{"image tag, registry with a port", deployment(corev1.Container{Name: "manager", Image: "localhost:5000/flotilla-manager:v1.3"}), "v1.3", "image tag"},
		{"image digest", deployment(corev1.Container{Name: "manager", Image: "r/flotilla-manager@sha256:abc"}), "sha256:abc", "image digest"},
		{"no tag", deployment(corev1.Container{Name: "manager", Image: "localhost:5000/flotilla-manager"}), "latest", "image without a tag"},
		{"the manager among sidecars", deployment(corev1.Container{Name: "proxy", Image: "p:v9"}, corev1.Container{Name: "manager", Image: "m:v1.4"}), "v1.4", "image tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, by := managerVersion(tt.d)
			if v != tt.version || by != tt.by {
				t.Errorf("managerVersion = %q (%s), want %q (%s)", v, by, tt.version, tt.by)
			}
		})
	}
}
