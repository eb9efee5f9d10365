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

func clusterEnvelope(data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.flotilla.io/v1alpha1", "kind": "ClusterResourceEnvelope",
		"metadata": map[string]any{"name": "admission"},
	}}
	if data != nil {
		u.Object["data"] = data
	}
	return u
}

func manifest(apiVersion, kind, namespace, name string) map[string]any {
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	m := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	if name == "" {
		m["metadata"] = map[string]any{}
	}
	return m
}

func TestIsRecognisesClusterResourceEnvelopesOfFlotillasGroupOnly(t *testing.T) {
	foreign := clusterEnvelope(nil)
	foreign.SetAPIVersion("placement.kubernetes-fleet.io/v1beta1")
	later := clusterEnvelope(nil)
	later.SetAPIVersion("policy.flotilla.io/v1beta1")
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"ClusterResourceEnvelope", clusterEnvelope(nil), true},
		{"ClusterResourceEnvelope of another version of the group", later, true},
		{"KubeFleet's ClusterResourceEnvelope", foreign, false},
	}
	for _, tt := range tests {
		if got := Is(tt.obj); got != tt.want {
			t.Errorf("%s: Is = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnwrapOfAClusterResourceEnvelope(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]any
		want    []string // kind namespace/name, in order
		wantErr string
	}{
		{
			name: "objects of any scope, in sorted key order, namespaces kept",
			data: map[string]any{
				"webhook":       manifest("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "guard"),
				"crd":           manifest("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "gadgets.example.com"),
				"a-service":     manifest("v1", "Service", "guard-system", "guard"),
				"b-kube-system": manifest("apps/v1", "DaemonSet", "kube-system", "agent"),
			},
			want: []string{"Service guard-system/guard", "DaemonSet kube-system/agent", "CustomResourceDefinition gadgets.example.com", "ValidatingWebhookConfiguration guard"},
		},
		{
			name: "one object",
			data: map[string]any{"apiservice": manifest("apiregistration.k8s.io/v1", "APIService", "", "v1beta1.metrics.k8s.io")},
			want: []string{"APIService v1beta1.metrics.k8s.io"},
		},
		{
			name: "no data carries nothing",
			data: nil,
		},
		{
			name:    "a manifest without apiVersion",
			data:    map[string]any{"b": manifest("v1", "Namespace", "", "ok"), "x": manifest("", "Namespace", "", "guard")},
			wantErr: "ClusterResourceEnvelope admission data[x]: apiVersion is missing",
		},
		{
			name:    "a manifest without kind",
			data:    map[string]any{"x": manifest("v1", "", "", "guard")},
			wantErr: "ClusterResourceEnvelope admission data[x]: kind is missing",
		},
		{
			name:    "a manifest without name",
			data:    map[string]any{"x": manifest("v1", "Namespace", "", "")},
			wantErr: "ClusterResourceEnvelope admission data[x]: metadata.name is missing",
		},
		{
			name:    "a manifest that is not an object",
			data:    map[string]any{"x": "apiVersion: v1\nkind: Namespace\n"},
			wantErr: "ClusterResourceEnvelope admission data[x]: a manifest is an object, not string",
		},
		{
			name: "the same object under two keys",
			data: map[string]any{
				"one": manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
				"two": manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
			},
			wantErr: "ClusterResourceEnvelope admission carries rbac.authorization.k8s.io/v1 ClusterRole reader twice",
		},
		{
			name: "the same name in two namespaces is two objects",
			data: map[string]any{
				"one": manifest("v1", "ConfigMap", "a", "settings"),
				"two": manifest("v1", "ConfigMap", "b", "settings"),
			},
			want: []string{"ConfigMap a/settings", "ConfigMap b/settings"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := clusterEnvelope(tt.data)
			objs, err := Unwrap(env)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Unwrap error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unwrap: %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+" "+name(o))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Unwrap = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnwrapOfAClusterResourceEnvelopeDoesNotShareItsData(t *testing.T) {
	env := clusterEnvelope(map[string]any{"ns": manifest("v1", "Namespace", "", "guard")})
	objs, err := Unwrap(env)
	if err != nil {
		t.Fatal(err)
	}
	objs[0].SetLabels(map[string]string{"changed": "yes"})
	again, _ := Unwrap(env)
	if again[0].GetLabels() != nil {
		t.Errorf("changing an unwrapped object changed the envelope: %v", again[0].GetLabels())
	}
}

func TestUnwrapRefusesTheSameObjectTwiceInAConfigMap(t *testing.T) {
	env := configMap(map[string]string{"flotilla.io/envelope": "true"}, map[string]any{
		"a.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
		"b.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
	})
	_, err := Unwrap(env)
	if want := "envelope fleet/hooks carries v1 Service web twice"; err == nil || err.Error() != want {
		t.Errorf("Unwrap error = %v, want %q", err, want)
	}
}

func TestUnwrapOfWhatIsNoEnvelopeFails(t *testing.T) {
	secret := configMap(map[string]string{"flotilla.io/envelope": "true"}, nil)
	secret.SetKind("Secret")
	if _, err := Unwrap(secret); err == nil || err.Error() != "Secret fleet/hooks is not an envelope" {
		t.Errorf("Unwrap of a Secret = %v, want an error", err)
	}
}
