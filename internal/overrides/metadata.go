package overrides

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Metadata maps the labels and annotations overriders change.
const (
	fieldLabels      = "labels"
	fieldAnnotations = "annotations"
)

// applyMetadataMap changes metadata.labels or metadata.annotations with
// Karmada's semantics: add sets each key (overwriting an existing value),
// replace and remove touch only keys that exist and skip the others.
func applyMetadataMap(obj *unstructured.Unstructured, field string, o *policyv1alpha1.LabelAnnotationOverrider) error {
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace, policyv1alpha1.OverriderOpRemove:
	default:
		return fmt.Errorf("operator %q is not add, remove or replace", o.Operator)
	}
	if len(o.Value) == 0 {
		return nil
	}
	create := o.Operator == policyv1alpha1.OverriderOpAdd
	metadata, err := childMap(obj.Object, "metadata", "/metadata", create)
	if err != nil || metadata == nil {
		return err
	}
	values, err := childMap(metadata, field, "/metadata/"+field, create)
	if err != nil || values == nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(o.Value)) {
		_, exists := values[key]
		switch {
		case o.Operator == policyv1alpha1.OverriderOpAdd:
			values[key] = o.Value[key]
		case !exists:
			// replace and remove skip keys the object does not have
		case o.Operator == policyv1alpha1.OverriderOpReplace:
			values[key] = o.Value[key]
		default: // remove
			delete(values, key)
		}
	}
	return nil
}

// childMap returns parent[key] as an object, creating it when asked; it
// returns nil when the key is absent and create is false.
func childMap(parent map[string]any, key, path string, create bool) (map[string]any, error) {
	value, found := parent[key]
	if !found || value == nil {
		if !create {
			return nil, nil
		}
		m := map[string]any{}
		parent[key] = m
		return m, nil
	}
	m, ok := value.(map[string]any)
	if !ok {
		return nil, &pathError{Path: path, Reason: fmt.Sprintf("is not an object but %T", value)}
	}
	return m, nil
}
