package binding

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func configMap(data string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "cm", "uid": "u1", "resourceVersion": "7"},
		"data":     map[string]any{"a": data},
	}}
	return u
}

func refOf(u *unstructured.Unstructured) workv1alpha1.ObjectReference {
	return workv1alpha1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID()}
}

// TestRecentTemplatesHandOverOnlyTheContentTheBindingRecords: the render
// phase gets a kept template only when it is the one the binding describes
// (same content, same UID), as a copy of its own; otherwise it reads the
// API server.
func TestRecentTemplatesHandOverOnlyTheContentTheBindingRecords(t *testing.T) {
	kept := configMap("1")
	content, size, err := Content(kept)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecentTemplates()
	r.Remember(kept, content, size)
	kept.Object["data"] = map[string]any{"a": "changed after it was kept"}

	got, ok := r.Get(refOf(configMap("1")), content)
	if !ok || got.Object["data"].(map[string]any)["a"] != "1" {
		t.Fatalf("Get with the recorded content = %v, %v; want the template as it was kept", got, ok)
	}
	got.Object["data"] = map[string]any{"a": "the caller's change"}
	if again, _ := r.Get(refOf(configMap("1")), content); again.Object["data"].(map[string]any)["a"] != "1" {
		t.Fatal("a caller's change reached the kept template")
	}

	newer, _, _ := Content(configMap("2"))
	if _, ok := r.Get(refOf(configMap("1")), newer); ok {
		t.Error("a binding recording other content got the kept template")
	}
	if _, ok := r.Get(refOf(configMap("1")), ""); ok {
		t.Error("a binding recording no content got the kept template")
	}
	recreated := refOf(configMap("1"))
	recreated.UID = types.UID("u2")
	if _, ok := r.Get(recreated, content); ok {
		t.Error("a binding naming another UID (the template deleted and created again) got the kept template")
	}
	r.Forget("v1", "ConfigMap", "ns", "cm")
	if _, ok := r.Get(refOf(configMap("1")), content); ok {
		t.Error("a forgotten template was handed over")
	}

	big := configMap(strings.Repeat("x", recentTemplateBytes))
	bigContent, bigSize, _ := Content(big)
	r.Remember(big, bigContent, bigSize)
	if _, ok := r.Get(refOf(big), bigContent); ok {
		t.Errorf("a template of %d bytes was kept; at most %d are", bigSize, recentTemplateBytes)
	}

	var none *RecentTemplates
	none.Remember(kept, content, size)
	if _, ok := none.Get(refOf(kept), content); ok {
		t.Error("a nil RecentTemplates handed a template over")
	}
}
