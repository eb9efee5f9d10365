package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// karmadaToFlotilla is the only change a Karmada user makes to a manifest.
func karmadaToFlotilla(manifest []byte) []byte {
	s := strings.ReplaceAll(string(manifest), "policy.karmada.io/v1alpha1", "policy.flotilla.io/v1alpha1")
	return []byte(strings.ReplaceAll(s, "config.karmada.io/v1alpha1", "config.flotilla.io/v1alpha1"))
}

func newObjectForKind(t *testing.T, manifest []byte) client.Object {
	t.Helper()
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(manifest, &meta); err != nil {
		t.Fatalf("read kind: %v", err)
	}
	switch meta.Kind {
	case "PropagationPolicy":
		return &policyv1alpha1.PropagationPolicy{}
	case "ClusterPropagationPolicy":
		return &policyv1alpha1.ClusterPropagationPolicy{}
	case "OverridePolicy":
		return &policyv1alpha1.OverridePolicy{}
	case "ClusterOverridePolicy":
		return &policyv1alpha1.ClusterOverridePolicy{}
	case "FederatedResourceQuota":
		return &policyv1alpha1.FederatedResourceQuota{}
	case "ClusterTaintPolicy":
		return &policyv1alpha1.ClusterTaintPolicy{}
	case "ResourceInterpreterCustomization":
		return &configv1alpha1.ResourceInterpreterCustomization{}
	}
	t.Fatalf("no Flotilla type for kind %q", meta.Kind)
	return nil
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// TestKarmadaManifestsDecodeAndApply decodes each manifest of
// testdata/karmada strictly (an unknown field fails), applies it to the
// apiserver with strict field validation, and checks that every field the
// user wrote comes back unchanged.
func TestKarmadaManifestsDecodeAndApply(t *testing.T) {
	files, err := filepath.Glob("testdata/karmada/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("want the Karmada manifests in testdata/karmada, got %v (%v)", files, err)
	}
	ensureNamespace(t, "fleet")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			manifest := karmadaToFlotilla(raw)
			obj := newObjectForKind(t, manifest)
			if err := yaml.UnmarshalStrict(manifest, obj); err != nil {
				t.Fatalf("decode %s into %T with only apiVersion changed: %v", file, obj, err)
			}
			written, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}

			ctx := context.Background()
			if err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
				t.Fatalf("apply %s: %v", file, err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })

			got := newObjectForKind(t, manifest)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatal(err)
			}
			read, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var want, have map[string]any
			_ = json.Unmarshal(written, &want)
			_ = json.Unmarshal(read, &have)
			if missing := notContained("", want["spec"], have["spec"]); len(missing) > 0 {
				t.Errorf("fields the user wrote changed or were dropped by the apiserver:\n  %s", strings.Join(missing, "\n  "))
			}
		})
	}
}

// notContained lists the paths of want whose values differ in got; got may
// hold more (defaults).
func notContained(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path + ": not an object"}
		}
		var out []string
		for k, v := range w {
			out = append(out, notContained(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path + ": list differs"}
		}
		var out []string
		for i := range w {
			out = append(out, notContained(path+"["+itoa(i)+"]", w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{path + ": want " + jsonString(want) + ", got " + jsonString(got)}
		}
		return nil
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }
