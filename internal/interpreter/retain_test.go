package interpreter

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRetain(t *testing.T) {
	entry := func(manager, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	ownsReplicas := `{"f:spec":{"f:replicas":{}}}`
	ownsImage := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:image":{}}}}}}}`
	cases := []struct {
		name    string
		kind    string
		managed []metav1.ManagedFieldsEntry
		want    []string // owners the field is left to; none: desired unchanged
	}{
		{name: "an autoscaler in the member owns spec.replicas", kind: "Deployment",
			managed: []metav1.ManagedFieldsEntry{entry("flotilla", "", `{"f:spec":{"f:template":{}}}`), entry("horizontal-pod-autoscaler", "scale", ownsReplicas)},
			want:    []string{"horizontal-pod-autoscaler"}},
		{name: "kubectl scale on a StatefulSet", kind: "StatefulSet",
			managed: []metav1.ManagedFieldsEntry{entry("kubectl", "scale", ownsReplicas)}, want: []string{"kubectl"}},
		{name: "Flotilla alone owns spec.replicas", kind: "Deployment",
			managed: []metav1.ManagedFieldsEntry{entry("flotilla", "", ownsReplicas)}},
		{name: "another manager owns another field only: it is set back as before", kind: "Deployment",
			managed: []metav1.ManagedFieldsEntry{entry("flotilla", "", ownsReplicas), entry("kubectl-edit", "", ownsImage)}},
		{name: "a kind without replicas", kind: "ConfigMap",
			managed: []metav1.ManagedFieldsEntry{entry("someone", "", ownsReplicas)}},
		{name: "unreadable managed fields are skipped", kind: "Deployment",
			managed: []metav1.ManagedFieldsEntry{entry("someone", "", `{not json`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			group := "apps"
			if tc.kind == "ConfigMap" {
				group = ""
			}
			desired := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": join(group, "v1"), "kind": tc.kind, "metadata": map[string]any{"name": "web", "namespace": "shop"},
				"spec": map[string]any{"replicas": int64(2)},
			}}
			observed := desired.DeepCopy()
			observed.SetManagedFields(tc.managed)
			got := Retain(desired, observed, "flotilla")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("left to %v, want %v", got, tc.want)
			}
			_, found, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec", "replicas")
			if found == (len(tc.want) > 0) {
				t.Fatalf("spec.replicas still in the apply: %v, want %v", found, len(tc.want) == 0)
			}
		})
	}
	if Retain(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}, nil, "flotilla") != nil {
		t.Fatal("an object the member does not hold yet retained something")
	}
}

func join(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}
