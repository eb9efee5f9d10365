package overrides

import (
	"fmt"
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestLabelsAndAnnotationsOverriders(t *testing.T) {
	// withMetadata is a ConfigMap with the given metadata fields.
	withMetadata := func(fields string) string {
		return fmt.Sprintf(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"%s}}`, fields)
	}
	original := withMetadata(`, "labels": {"app": "web", "tier": "frontend"}, "annotations": {"example.com/owner": "team-a"}`)
	tests := []struct {
		name        string
		template    string
		labels      []policyv1alpha1.LabelAnnotationOverrider
		annotations []policyv1alpha1.LabelAnnotationOverrider
		want        string
	}{
		{
			name:     "labels add sets new keys and overwrites existing ones",
			template: original,
			labels:   []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"region": "eu", "tier": "edge"}}},
			want:     withMetadata(`, "labels": {"app": "web", "tier": "edge", "region": "eu"}, "annotations": {"example.com/owner": "team-a"}`),
		},
		{
			name:     "labels add creates the map",
			template: withMetadata(""),
			labels:   []policyv1alpha1.LabelAnnotationOverrider{{Operator: "add", Value: map[string]string{"region": "eu"}}},
			want:     withMetadata(`, "labels": {"region": "eu"}`),
		},
		{
			name:     "labels replace changes existing keys and skips missing ones",
			template: original,
			labels:   []policyv1alpha1.LabelAnnotationOverrider{{Operator: "replace", Value: map[string]string{"tier": "backend", "region": "eu"}}},
			want:     withMetadata(`, "labels": {"app": "web", "tier": "backend"}, "annotations": {"example.com/owner": "team-a"}`),
		},
		{
			name:     "labels replace on an object without labels changes nothing",
			template: withMetadata(""),
			labels:   []policyv1alpha1.LabelAnnotationOverrider{{Operator: "replace", Value: map[string]string{"tier": "backend"}}},
			want:     withMetadata(""),
		},
		{
			name:     "labels remove deletes existing keys, whatever the value given, and skips missing ones",
			template: original,
			labels:   []policyv1alpha1.LabelAnnotationOverrider{{Operator: "remove", Value: map[string]string{"tier": "", "region": ""}}},
			want:     withMetadata(`, "labels": {"app": "web"}, "annotations": {"example.com/owner": "team-a"}`),
		},
		{
			name:        "annotations with slashes in keys",
			template:    original,
			annotations: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "replace", Value: map[string]string{"example.com/owner": "team-b"}}, {Operator: "add", Value: map[string]string{"example.com/cost-center": "42"}}},
			want:        withMetadata(`, "labels": {"app": "web", "tier": "frontend"}, "annotations": {"example.com/owner": "team-b", "example.com/cost-center": "42"}`),
		},
		{
			name:        "annotations remove does not touch labels of the same key",
			template:    withMetadata(`, "labels": {"k": "label"}, "annotations": {"k": "annotation"}`),
			annotations: []policyv1alpha1.LabelAnnotationOverrider{{Operator: "remove", Value: map[string]string{"k": ""}}},
			want:        withMetadata(`, "labels": {"k": "label"}, "annotations": {}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{LabelsOverrider: tt.labels, AnnotationsOverrider: tt.annotations})
			if err != nil {
				t.Fatal(err)
			}
			assertObject(t, got, tt.want)
		})
	}
}

func TestLabelsOverriderRejects(t *testing.T) {
	tests := []struct {
		name, template string
		o              policyv1alpha1.LabelAnnotationOverrider
		want           string
	}{
		{"labels that are not an object", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": "app=web"}}`,
			policyv1alpha1.LabelAnnotationOverrider{Operator: "add", Value: map[string]string{"a": "b"}},
			"ClusterOverridePolicy test rule 0 labelsOverrider[0]: path /metadata/labels is not an object but string"},
		{"an unknown operator", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`,
			policyv1alpha1.LabelAnnotationOverrider{Operator: "merge", Value: map[string]string{"a": "b"}},
			`ClusterOverridePolicy test rule 0 labelsOverrider[0]: operator "merge" is not add, remove or replace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := override(t, object(t, tt.template), policyv1alpha1.Overriders{LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{tt.o}})
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}
