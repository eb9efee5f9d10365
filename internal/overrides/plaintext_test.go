package overrides

import (
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestPlaintextOverrider(t *testing.T) {
	const service = `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
	                  "spec": {"type": "ClusterIP", "ports": [{"port": 80}, {"port": 443}]}}`
	tests := []struct {
		name string
		ops  []policyv1alpha1.PlaintextOverrider
		want string
	}{
		{
			name: "add creates a field",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/externalTrafficPolicy", Operator: "add", Value: raw(`"Local"`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "externalTrafficPolicy": "Local", "ports": [{"port": 80}, {"port": 443}]}}`,
		},
		{
			name: "add on an existing field overwrites it",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/type", Operator: "add", Value: raw(`"NodePort"`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}`,
		},
		{
			name: "add at an array index inserts",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/ports/1", Operator: "add", Value: raw(`{"port": 8080}`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "ports": [{"port": 80}, {"port": 8080}, {"port": 443}]}}`,
		},
		{
			name: "add at - appends",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/ports/-", Operator: "add", Value: raw(`{"port": 9090}`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "ports": [{"port": 80}, {"port": 443}, {"port": 9090}]}}`,
		},
		{
			name: "add with a key that needs escaping",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/annotations", Operator: "add", Value: raw(`{}`)}, {Path: "/metadata/annotations/example.com~1owner", Operator: "add", Value: raw(`"team-a"`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "annotations": {"example.com/owner": "team-a"}},
			       "spec": {"type": "ClusterIP", "ports": [{"port": 80}, {"port": 443}]}}`,
		},
		{
			name: "replace an object with a number keeps it an integer",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/ports/0", Operator: "replace", Value: raw(`{"port": 8443, "targetPort": 443}`)}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "ports": [{"port": 8443, "targetPort": 443}, {"port": 443}]}}`,
		},
		{
			name: "remove a field",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/type", Operator: "remove"}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"ports": [{"port": 80}, {"port": 443}]}}`,
		},
		{
			name: "remove an array element shifts the rest",
			ops:  []policyv1alpha1.PlaintextOverrider{{Path: "/spec/ports/0", Operator: "remove"}},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "ports": [{"port": 443}]}}`,
		},
		{
			name: "operations apply in order, each on the result of the previous",
			ops: []policyv1alpha1.PlaintextOverrider{
				{Path: "/spec/selector", Operator: "add", Value: raw(`{"app": "web"}`)},
				{Path: "/spec/selector/app", Operator: "replace", Value: raw(`"api"`)},
			},
			want: `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
			       "spec": {"type": "ClusterIP", "selector": {"app": "api"}, "ports": [{"port": 80}, {"port": 443}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, service), policyv1alpha1.Overriders{Plaintext: tt.ops})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestPlaintextOverriderRejects(t *testing.T) {
	tests := []struct {
		name string
		op   policyv1alpha1.PlaintextOverrider
		want string
	}{
		{"replace of a missing field", policyv1alpha1.PlaintextOverrider{Path: "/spec/clusterIP", Operator: "replace", Value: raw(`"None"`)},
			"path /spec/clusterIP does not exist"},
		{"remove of a missing field", policyv1alpha1.PlaintextOverrider{Path: "/spec/clusterIP", Operator: "remove"},
			"path /spec/clusterIP does not exist"},
		{"add past the end of an array", policyv1alpha1.PlaintextOverrider{Path: "/spec/ports/5", Operator: "add", Value: raw(`{}`)},
			"path /spec/ports/5 cannot be added: array index out of range"},
		{"an unknown operator", policyv1alpha1.PlaintextOverrider{Path: "/spec/type", Operator: "move"},
			`operator "move" is not add, remove or replace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := override(t, object(t, `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}}`),
				policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{tt.op}})
			want := "ClusterOverridePolicy test rule 0 plaintext[0]: " + tt.want
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v, want %q", err, want)
			}
		})
	}
}
