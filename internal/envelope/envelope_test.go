package envelope

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func configMap(labels map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hooks", "namespace": "fleet"},
	}}
	if data != nil {
		u.Object["data"] = data
	}
	u.SetLabels(labels)
	return u
}

func TestIsRecognisesOnlyLabelledCoreConfigMaps(t *testing.T) {
	labelled := map[string]string{"flotilla.io/envelope": "true"}
	secret := configMap(labelled, nil)
	secret.SetKind("Secret")
	foreign := configMap(labelled, nil)
	foreign.SetAPIVersion("example.com/v1")
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"labelled ConfigMap", configMap(labelled, nil), true},
		{"ConfigMap without the label", configMap(nil, nil), false},
		{"ConfigMap labelled false", configMap(map[string]string{"flotilla.io/envelope": "false"}, nil), false},
		{"labelled Secret", secret, false},
		{"labelled ConfigMap kind of another group", foreign, false},
	}
	for _, tt := range tests {
		if got := Is(tt.obj); got != tt.want {
			t.Errorf("%s: Is = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnwrapReturnsTheObjectsInKeyThenDocumentOrder(t *testing.T) {
	env := configMap(map[string]string{"flotilla.io/envelope": "true"}, map[string]any{
		"b-webhooks.yaml": `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: check}
---
# a comment-only document is skipped
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutate}
`,
		"a-apiservice.yaml": `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1}
`,
	})
	objs, err := Unwrap(env)
	if err != nil {
		t.Fatalf("Unwrap: %v", err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"APIService/v1beta1.metrics.k8s.io", "ValidatingWebhookConfiguration/check", "MutatingWebhookConfiguration/mutate"}
	if !slices.Equal(got, want) {
		t.Errorf("Unwrap = %v, want %v", got, want)
	}
	if group, _, _ := unstructured.NestedString(objs[0].Object, "spec", "group"); group != "metrics.k8s.io" {
		t.Errorf("APIService spec.group = %q, want metrics.k8s.io", group)
	}
}

func TestUnwrapNamesTheKeyAndDocumentOfAnInvalidManifest(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", "envelope fleet/hooks data[x.yaml]: document 0: kind is missing"},
		{"no apiVersion", "kind: Service\nmetadata: {name: x}\n", "envelope fleet/hooks data[x.yaml]: document 0: apiVersion is missing"},
		{"no name in the second document", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {}\n", "envelope fleet/hooks data[x.yaml]: document 1: metadata.name is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Unwrap(configMap(nil, map[string]any{"x.yaml": tt.value}))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Unwrap error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestUnwrapOfAnEmptyEnvelopeIsEmpty(t *testing.T) {
	objs, err := Unwrap(configMap(map[string]string{"flotilla.io/envelope": "true"}, nil))
	if err != nil || len(objs) != 0 {
		t.Errorf("Unwrap = %v, %v; want nothing", objs, err)
	}
}
