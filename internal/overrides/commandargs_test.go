package overrides

import (
	"fmt"
	"strings"
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestCommandAndArgsOverriders(t *testing.T) {
	// deployment has an app container with command and args, a sidecar
	// without either, and an init container with a command.
	deployment := func(app, sidecar, init string) string {
		return fmt.Sprintf(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": {"spec": {
		  "containers": [{"name": "app", "image": "app:1"%s}, {"name": "sidecar", "image": "proxy:1"%s}],
		  "initContainers": [{"name": "init", "image": "init:1"%s}]}}}}`, app, sidecar, init)
	}
	const (
		appFields  = `, "command": ["/app", "serve"], "args": ["--port=80", "-v", "--port=80"]`
		initFields = `, "command": ["/init"]`
	)
	original := deployment(appFields, "", initFields)
	tests := []struct {
		name    string
		command []policyv1alpha1.CommandArgsOverrider
		args    []policyv1alpha1.CommandArgsOverrider
		want    string
	}{
		{
			name:    "command add appends",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "add", Value: []string{"--debug", "--trace"}}},
			want:    deployment(`, "command": ["/app", "serve", "--debug", "--trace"], "args": ["--port=80", "-v", "--port=80"]`, "", initFields),
		},
		{
			name: "args remove deletes every occurrence of each listed item",
			args: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "remove", Value: []string{"--port=80", "--absent"}}},
			want: deployment(`, "command": ["/app", "serve"], "args": ["-v"]`, "", initFields),
		},
		{
			name: "remove of every item leaves an empty list",
			args: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "remove", Value: []string{"--port=80", "-v"}}},
			want: deployment(`, "command": ["/app", "serve"], "args": []`, "", initFields),
		},
		{
			name: "add to a container without args sets them",
			args: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "sidecar", Operator: "add", Value: []string{"--mesh"}}},
			want: deployment(appFields, `, "args": ["--mesh"]`, initFields),
		},
		{
			name:    "remove from a container without a command changes nothing",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "sidecar", Operator: "remove", Value: []string{"/bin/sh"}}},
			want:    original,
		},
		{
			name:    "add of nothing to a container without a command changes nothing",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "sidecar", Operator: "add"}},
			want:    original,
		},
		{
			name:    "an init container is found by name",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "init", Operator: "add", Value: []string{"--once"}}},
			want:    deployment(appFields, "", `, "command": ["/init", "--once"]`),
		},
		{
			name:    "a missing container is a no-op",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "absent", Operator: "add", Value: []string{"x"}}},
			args:    []policyv1alpha1.CommandArgsOverrider{{ContainerName: "absent", Operator: "remove", Value: []string{"-v"}}},
			want:    original,
		},
		{
			name:    "command and args are separate lists",
			command: []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "remove", Value: []string{"-v"}}},
			args:    []policyv1alpha1.CommandArgsOverrider{{ContainerName: "app", Operator: "remove", Value: []string{"serve"}}},
			want:    original,
		},
		{
			name: "overriders of a list apply in order",
			args: []policyv1alpha1.CommandArgsOverrider{
				{ContainerName: "app", Operator: "add", Value: []string{"--extra"}},
				{ContainerName: "app", Operator: "remove", Value: []string{"--extra", "-v"}},
			},
			want: deployment(`, "command": ["/app", "serve"], "args": ["--port=80", "--port=80"]`, "", initFields),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, original), policyv1alpha1.Overriders{CommandOverrider: tt.command, ArgsOverrider: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestCommandOverriderFindsContainersOfEveryWorkloadKind(t *testing.T) {
	tests := []struct {
		name, template, want string
	}{
		{"Pod",
			`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "command": ["/app"]}]}}`,
			`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "command": ["/app", "-x"]}]}}`},
		{"StatefulSet",
			`{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["/app"]}]}}}}`,
			`{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["/app", "-x"]}]}}}}`},
		{"CronJob",
			`{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["/app"]}]}}}}}}`,
			`{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "app", "command": ["/app", "-x"]}]}}}}}}`},
		{"an unknown kind is left alone",
			`{"apiVersion": "example.com/v1", "kind": "Runner", "metadata": {"name": "r"}, "spec": {"containers": [{"name": "app", "command": ["/app"]}]}}`,
			`{"apiVersion": "example.com/v1", "kind": "Runner", "metadata": {"name": "r"}, "spec": {"containers": [{"name": "app", "command": ["/app"]}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{CommandOverrider: []policyv1alpha1.CommandArgsOverrider{
				{ContainerName: "app", Operator: "add", Value: []string{"-x"}}}})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestCommandArgsOverriderRejects(t *testing.T) {
	const pod = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "args": ["a", 1]}]}}`
	tests := []struct {
		name string
		o    policyv1alpha1.CommandArgsOverrider
		want string
	}{
		{"replace is not an operator here", policyv1alpha1.CommandArgsOverrider{ContainerName: "app", Operator: "replace", Value: []string{"x"}},
			`argsOverrider[0]: operator "replace" is not add or remove`},
		{"a container name is needed", policyv1alpha1.CommandArgsOverrider{Operator: "add", Value: []string{"x"}},
			"argsOverrider[0]: containerName is empty"},
		{"args that are not strings", policyv1alpha1.CommandArgsOverrider{ContainerName: "app", Operator: "add", Value: []string{"x"}},
			"argsOverrider[0]: path /spec/containers/0/args/1 is not a string but int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := override(t, object(t, pod), policyv1alpha1.Overriders{ArgsOverrider: []policyv1alpha1.CommandArgsOverrider{tt.o}})
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to end with %q", err, tt.want)
			}
		})
	}
}
