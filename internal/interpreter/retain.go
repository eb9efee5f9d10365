package interpreter

import (
	"bytes"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Retain is the retain step for replica counts: it takes a workload's
// replica field out of desired, the object about to be applied to a member,
// when observed — the object the member holds — says that field belongs to
// another field manager than fieldManager (Flotilla's). A
// HorizontalPodAutoscaler in the member scaling the Deployment, or someone
// running `kubectl scale` there, owns spec.replicas: applying Flotilla's
// share over it would fail with a conflict forever (server-side apply
// without force) or fight the autoscaler (with force). Left out of the
// apply, the field stays the member's and Flotilla owns the rest.
//
// Only the replica field is retained this way, and only from another
// manager's ownership: what someone changes by hand elsewhere in the
// object is still set back (or reported a conflict) as before. It returns
// the managers the field was left to, none when nothing was retained.
func Retain(desired, observed *unstructured.Unstructured, fieldManager string) []string {
	f, ok := field(groupKind(desired))
	if !ok || observed == nil {
		return nil
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(desired.Object, f...); !found {
		return nil
	}
	owners := KeptBy(observed, fieldManager)
	if len(owners) > 0 {
		unstructured.RemoveNestedField(desired.Object, f...)
	}
	return owners
}

// KeptBy lists the field managers other than fieldManager that own the
// replica field of obj, an object a member holds: those Retain leaves it to.
func KeptBy(obj *unstructured.Unstructured, fieldManager string) []string {
	f, ok := field(groupKind(obj))
	if !ok {
		return nil
	}
	path := make([]any, len(f))
	for i, p := range f {
		path[i] = p
	}
	target := fieldpath.MakePathOrDie(path...)
	var owners []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == fieldManager || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue
		}
		if set.Has(target) && !slices.Contains(owners, e.Manager) {
			owners = append(owners, e.Manager)
		}
	}
	return owners
}

// RetainedMessage says which field of obj the member keeps and for whom.
func RetainedMessage(obj *unstructured.Unstructured, owners []string) string {
	f, _ := field(groupKind(obj))
	return joinPath(f)[1:] + " kept as the member's: owned there by " + strings.Join(owners, ", ")
}
