// Package envelope unwraps envelopes: objects that would act on the hub if
// created there (ValidatingWebhookConfiguration, MutatingWebhookConfiguration,
// APIService, CRDs, …) travel to members inside an envelope, which a policy
// selects like any template. The envelope itself never reaches a member; its
// contents do. There are two kinds:
//
//   - a ConfigMap labelled flotilla.io/envelope: "true" (namespaced, the
//     tenants' envelope): its data values are YAML manifests, each value
//     one or more documents separated by "---"; empty documents are
//     skipped; binaryData is ignored;
//   - a ClusterResourceEnvelope (policy.flotilla.io, cluster-scoped, a
//     cluster admin's envelope): its data values are whole manifests as
//     objects, which the API server has already checked for apiVersion,
//     kind and metadata.name; they are checked again here.
//
// Rules common to both: data keys are read in sorted order (the order of the
// objects in a Work), every object needs apiVersion, kind and
// metadata.name, and no two objects of an envelope may have the same
// apiVersion, kind, namespace and name. Objects keep the namespace they are
// written with; which scopes and namespaces a binding may render is the
// tenancy rule's business (internal/tenancy), applied by the binding
// controller after unwrapping: a ConfigMap's contents are confined to its
// namespace, a ClusterResourceEnvelope's (a ClusterResourceBinding's) are not.
package envelope

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Is reports whether obj is an envelope: a core ConfigMap labelled
// flotilla.io/envelope: "true", or a ClusterResourceEnvelope.
func Is(obj *unstructured.Unstructured) bool {
	return isConfigMap(obj) || isCluster(obj)
}

func isConfigMap(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "ConfigMap" && obj.GetLabels()[policyv1alpha1.EnvelopeLabel] == "true"
}

func isCluster(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == policyv1alpha1.GroupVersion.Group && gvk.Kind == policyv1alpha1.ClusterResourceEnvelopeKind
}

// Unwrap returns the objects an envelope carries, in the order of its
// sorted data keys and, within a ConfigMap's value, of its documents. The
// error names the envelope, the key and, in a ConfigMap, the document at
// fault.
func Unwrap(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var (
		out []*unstructured.Unstructured
		err error
	)
	switch gvk := obj.GroupVersionKind(); {
	case gvk.Group == "" && gvk.Kind == "ConfigMap": // label or not: Is decides what is an envelope
		out, err = unwrapConfigMap(obj)
	case isCluster(obj):
		out, err = unwrapCluster(obj)
	default:
		return nil, fmt.Errorf("%s %s is not an envelope", obj.GetKind(), name(obj))
	}
	if err != nil {
		return nil, err
	}
	return out, unique(obj, out)
}

func unwrapConfigMap(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	data, _, err := unstructured.NestedStringMap(obj.Object, "data")
	if err != nil {
		return nil, fmt.Errorf("envelope %s: data: %w", name(obj), err)
	}
	var out []*unstructured.Unstructured
	for _, key := range slices.Sorted(maps.Keys(data)) {
		objs, err := decode(data[key])
		if err != nil {
			return nil, fmt.Errorf("envelope %s data[%s]: %w", name(obj), key, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

func unwrapCluster(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	data, _, err := unstructured.NestedMap(obj.Object, "data")
	if err != nil {
		return nil, fmt.Errorf("ClusterResourceEnvelope %s: data: %w", name(obj), err)
	}
	var out []*unstructured.Unstructured
	for _, key := range slices.Sorted(maps.Keys(data)) {
		m, ok := data[key].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ClusterResourceEnvelope %s data[%s]: a manifest is an object, not %T", name(obj), key, data[key])
		}
		u := &unstructured.Unstructured{Object: m}
		if err := complete(u); err != nil {
			return nil, fmt.Errorf("ClusterResourceEnvelope %s data[%s]: %w", name(obj), key, err)
		}
		out = append(out, u)
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
		if err := complete(u); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, u)
	}
}

// complete checks that u names its apiVersion, kind and name.
func complete(u *unstructured.Unstructured) error {
	switch {
	case u.GetAPIVersion() == "":
		return errors.New("apiVersion is missing")
	case u.GetKind() == "":
		return errors.New("kind is missing")
	case u.GetName() == "":
		return errors.New("metadata.name is missing")
	}
	return nil
}

// unique refuses two objects of the same identity in one envelope: one
// would silently replace the other in the member.
func unique(env *unstructured.Unstructured, objs []*unstructured.Unstructured) error {
	seen := map[string]bool{}
	for _, o := range objs {
		id := o.GetAPIVersion() + " " + o.GetKind() + " " + name(o)
		if seen[id] {
			return fmt.Errorf("%s %s carries %s twice", kindOf(env), name(env), id)
		}
		seen[id] = true
	}
	return nil
}

func kindOf(env *unstructured.Unstructured) string {
	if isCluster(env) {
		return policyv1alpha1.ClusterResourceEnvelopeKind
	}
	return "envelope"
}

func name(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
