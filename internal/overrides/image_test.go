package overrides

import (
	"fmt"
	"strings"
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// podWithImage is a Pod whose single container runs image.
func podWithImage(image string) string {
	return fmt.Sprintf(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
	                     "spec": {"containers": [{"name": "app", "image": %q}]}}`, image)
}

func TestImageOverriderComponents(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		component policyv1alpha1.ImageComponent
		operator  policyv1alpha1.OverriderOperator
		value     string
		want      string
	}{
		{"registry replace", "docker.io/library/nginx:1.25", "Registry", "replace", "registry.example.com", "registry.example.com/library/nginx:1.25"},
		{"registry replace where there was none", "nginx:1.25", "Registry", "replace", "registry.example.com:5000", "registry.example.com:5000/nginx:1.25"},
		{"registry add appends to the registry text", "fictional.registry.example/imagename:v1.0.0", "Registry", "add", ".test", "fictional.registry.example.test/imagename:v1.0.0"},
		{"registry add where there was none sets it", "perl:5.34.0", "Registry", "add", "registry.k8s.io", "registry.k8s.io/perl:5.34.0"},
		{"registry remove", "registry.k8s.io/pause:3.9", "Registry", "remove", "", "pause:3.9"},
		{"registry remove keeps a first path component that is not a registry", "ubuntu/nginx", "Registry", "remove", "", "ubuntu/nginx"},
		{"registry replace keeps tag and digest", "quay.io/org/app:v2@" + digest, "Registry", "replace", "mirror.example.com", "mirror.example.com/org/app:v2@" + digest},
		{"repository add appends to the repository text", "fictional.registry.example/imagename:v1.0.0", "Repository", "add", "/nginx", "fictional.registry.example/imagename/nginx:v1.0.0"},
		{"repository replace", "fictional.registry.example/imagename:v1.0.0", "Repository", "replace", "nginx", "fictional.registry.example/nginx:v1.0.0"},
		{"tag add appends to the tag", "nginx:1.25", "Tag", "add", "-alpine", "nginx:1.25-alpine"},
		{"tag add where there was none sets it", "nginx", "Tag", "add", "1.25", "nginx:1.25"},
		{"tag replace", "nginx:1.25", "Tag", "replace", "1.26", "nginx:1.26"},
		{"tag replace with a digest drops the tag", "fictional.registry.example/imagename:v1.0.0", "Tag", "replace", digest, "fictional.registry.example/imagename@" + digest},
		{"tag replace with an @digest drops the tag", "nginx:1.25", "Tag", "replace", "@" + digest, "nginx@" + digest},
		{"tag replace with a tag drops the digest", "nginx@" + digest, "Tag", "replace", "1.25", "nginx:1.25"},
		{"tag remove", "registry.k8s.io/pause:3.9", "Tag", "remove", "", "registry.k8s.io/pause"},
		{"tag remove of a digest", "nginx@" + digest, "Tag", "remove", "", "nginx"},
		{"tag remove with tag and digest removes the tag", "app:v2@" + digest, "Tag", "remove", "", "app@" + digest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, podWithImage(tt.image)), policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
				{Component: tt.component, Operator: tt.operator, Value: tt.value}}})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, podWithImage(tt.want))
		})
	}
}

func TestImageOverriderRejects(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		component policyv1alpha1.ImageComponent
		operator  policyv1alpha1.OverriderOperator
		value     string
		want      string
	}{
		// Karmada leaves the image unchanged here; a silent no-op hides a broken policy.
		{"a tag add that makes neither tag nor digest", "nginx:1.25", "Tag", "add", digest, `holds image "nginx:1.25", which cannot be overridden: "1.25` + digest + `" is neither a tag nor a digest`},
		{"a repository remove", "registry.k8s.io/pause:3.9", "Repository", "remove", "", `holds image "registry.k8s.io/pause:3.9", which cannot be overridden: the result "registry.k8s.io/:3.9" is not a valid image reference`},
		{"a registry that is not a host", "nginx", "Registry", "replace", "bad_host.example.com", `holds image "nginx", which cannot be overridden: the result "bad_host.example.com/nginx" is not a valid image reference`},
		{"replace without a value", "nginx", "Tag", "replace", "", "operator replace needs a value"},
		{"an unknown component", "nginx", "Digest", "remove", "", `component "Digest" is not Registry, Repository or Tag`},
		{"an unknown operator", "nginx", "Tag", "set", "1", `operator "set" is not add, remove or replace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := override(t, object(t, podWithImage(tt.image)), policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
				{Component: tt.component, Operator: tt.operator, Value: tt.value}}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestImageOverriderWithoutPredicateCoversEveryContainerOfWorkloads(t *testing.T) {
	// podSpec has two containers and an init container, all on docker.io.
	const podSpec = `{"containers": [{"name": "app", "image": "docker.io/org/app:1"}, {"name": "sidecar", "image": "docker.io/org/proxy:2"}],
	                  "initContainers": [{"name": "init", "image": "docker.io/org/init:3"}]}`
	const mirrored = `{"containers": [{"name": "app", "image": "mirror.example.com/org/app:1"}, {"name": "sidecar", "image": "mirror.example.com/org/proxy:2"}],
	                   "initContainers": [{"name": "init", "image": "mirror.example.com/org/init:3"}]}`
	workload := func(apiVersion, kind, spec string) string {
		return fmt.Sprintf(`{"apiVersion": %q, "kind": %q, "metadata": {"name": "w"}, "spec": {"template": {"spec": %s}}}`, apiVersion, kind, spec)
	}
	cronJob := func(spec string) string {
		return fmt.Sprintf(`{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "w"},
		                     "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": {"spec": %s}}}}}`, spec)
	}
	pod := func(spec string) string {
		return fmt.Sprintf(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w"}, "spec": %s}`, spec)
	}
	tests := []struct {
		name, template, want string
	}{
		{"Pod", pod(podSpec), pod(mirrored)},
		{"Deployment", workload("apps/v1", "Deployment", podSpec), workload("apps/v1", "Deployment", mirrored)},
		{"ReplicaSet", workload("apps/v1", "ReplicaSet", podSpec), workload("apps/v1", "ReplicaSet", mirrored)},
		{"StatefulSet", workload("apps/v1", "StatefulSet", podSpec), workload("apps/v1", "StatefulSet", mirrored)},
		{"DaemonSet", workload("apps/v1", "DaemonSet", podSpec), workload("apps/v1", "DaemonSet", mirrored)},
		{"Job", workload("batch/v1", "Job", podSpec), workload("batch/v1", "Job", mirrored)},
		{"CronJob", cronJob(podSpec), cronJob(mirrored)},
		{"a Deployment of another group is not a known workload", workload("example.com/v1", "Deployment", podSpec), workload("example.com/v1", "Deployment", podSpec)},
		{"a ConfigMap is left alone", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"image": "docker.io/org/app:1"}}`,
			`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"image": "docker.io/org/app:1"}}`},
		{"a workload without containers is left alone", workload("apps/v1", "Deployment", `{}`), workload("apps/v1", "Deployment", `{}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
				{Component: "Registry", Operator: "replace", Value: "mirror.example.com"}}})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestImageOverriderWithPredicateChangesOnlyThatImage(t *testing.T) {
	tests := []struct {
		name, template, path, want string
	}{
		{
			name: "one container of a Deployment",
			template: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": {
			            "containers": [{"name": "app", "image": "docker.io/org/app:1"}, {"name": "sidecar", "image": "docker.io/org/proxy:2"}]}}}}`,
			path: "/spec/template/spec/containers/1/image",
			want: `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": {
			        "containers": [{"name": "app", "image": "docker.io/org/app:1"}, {"name": "sidecar", "image": "mirror.example.com/org/proxy:2"}]}}}}`,
		},
		{
			name:     "any kind, any string field",
			template: `{"apiVersion": "example.com/v1", "kind": "Database", "metadata": {"name": "db"}, "spec": {"engine": {"image": "docker.io/org/pg:16"}}}`,
			path:     "/spec/engine/image",
			want:     `{"apiVersion": "example.com/v1", "kind": "Database", "metadata": {"name": "db"}, "spec": {"engine": {"image": "mirror.example.com/org/pg:16"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{ImageOverrider: []policyv1alpha1.ImageOverrider{
				{Predicate: &policyv1alpha1.ImagePredicate{Path: tt.path}, Component: "Registry", Operator: "replace", Value: "mirror.example.com"}}})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}
