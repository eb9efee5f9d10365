package overrides

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyPlaintext applies one JSON patch operation to the whole object.
func applyPlaintext(obj *unstructured.Unstructured, o *policyv1alpha1.PlaintextOverrider) error {
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding the object: %w", err)
	}
	out, err := applyPatchOp(doc, o.Operator, o.Path, o.Value)
	if err != nil {
		return err
	}
	// utiljson decodes whole numbers as int64, as unstructured objects hold them.
	var patched map[string]any
	if err := utiljson.Unmarshal(out, &patched); err != nil {
		return fmt.Errorf("decoding the patched object: %w", err)
	}
	obj.Object = patched
	return nil
}
