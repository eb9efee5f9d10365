// Package envelope unwraps envelope ConfigMaps: objects that would act on
// the hub if created there (ValidatingWebhookConfiguration,
// MutatingWebhookConfiguration, APIService, …) travel to members inside a
// ConfigMap labelled flotilla.io/envelope: "true", whose data values are YAML
// manifests. The ConfigMap itself never reaches a member; its contents do.
//
// Rules: data keys are read in sorted order, each value may hold several
// YAML documents separated by "---", empty documents are skipped, and every
// object needs apiVersion, kind and metadata.name. Objects keep the namespace
// they are written with; which scopes and namespaces a binding may render is
// the tenancy rule's business (internal/tenancy), applied by the binding
// controller after unwrapping. binaryData is ignored.
package envelope

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Is reports whether obj is an envelope: a core ConfigMap labelled
// flotilla.io/envelope: "true".
func Is(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "ConfigMap" && obj.GetLabels()[policyv1alpha1.EnvelopeLabel] == "true"
}

// Unwrap returns the objects an envelope carries, in the order of its
// sorted data keys and, within a value, of its documents. The error names
// the key and document at fault.
func Unwrap(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	data, _, err := unstructured.NestedStringMap(obj.Object, "data")
	if err != nil {
		return nil, fmt.Errorf("envelope %s/%s: data: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []*unstructured.Unstructured
	for _, key := range keys {
		objs, err := decode(data[key])
		if err != nil {
			return nil, fmt.Errorf("envelope %s/%s data[%s]: %w", obj.GetNamespace(), obj.GetName(), key, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

func decode(value string) ([]*unstructured.Unstructured, error) {
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader([]byte(value))))
	var out []*unstructured.Unstructured
	for doc := 0; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(u.Object) == 0 {
			continue // only comments
		}
		switch {
		case u.GetAPIVersion() == "":
			return nil, fmt.Errorf("document %d: apiVersion is missing", doc)
		case u.GetKind() == "":
			return nil, fmt.Errorf("document %d: kind is missing", doc)
		case u.GetName() == "":
			return nil, fmt.Errorf("document %d: metadata.name is missing", doc)
		}
		out = append(out, u)
	}
}
