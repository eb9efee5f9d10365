package cli

import (
	"bytes"
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flotilla-io/flotilla/internal/hubscheme"
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

func TestManagerVersionForATenantWhoMayNotListDeploymentsEverywhere(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-manager",
		Labels: map[string]string{"app.kubernetes.io/name": "flotilla-manager"}}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Image: "r/flotilla-manager:v0.4.0"}}
	forbidden := func(everywhere bool) client.Client {
		return fake.NewClientBuilder().WithScheme(hubscheme.New()).WithObjects(d).WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				o := &client.ListOptions{}
				o.ApplyOptions(opts)
				if o.Namespace == "" || everywhere {
					return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	}
	out := &bytes.Buffer{}
	if err := printManagerVersion(context.Background(), out, forbidden(false)); err != nil {
		t.Fatal(err)
	}
	if want := "Manager version: v0.4.0 (image tag, Deployment flotilla-system/flotilla-manager)\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := printManagerVersion(context.Background(), out, forbidden(true)); err != nil {
		t.Fatal(err)
	}
	if want := "Manager version: unknown (your hub credentials may not list Deployments in flotilla-system, where clusterctl installs flotilla-manager)\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
