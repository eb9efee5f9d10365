package overrides

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// patchOptions are RFC 6902 strict, as in Karmada: replace and remove of a
// missing path fail, add does not create missing parents. HTML escaping is
// off so that embedded documents keep "<", ">" and "&" as written.
func patchOptions() *jsonpatch.ApplyOptions {
	opts := jsonpatch.NewApplyOptions()
	opts.EscapeHTML = false
	return opts
}

// applyPatchOp applies one add, remove or replace to a JSON document.
func applyPatchOp(doc []byte, op policyv1alpha1.OverriderOperator, path string, value apiextensionsv1.JSON) ([]byte, error) {
	if _, err := parsePointer(path); err != nil {
		return nil, err
	}
	operation := jsonpatch.Operation{"op": rawJSON(string(op)), "path": rawJSON(path)}
	switch op {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		if len(value.Raw) == 0 {
			return nil, &pathError{Path: path, Reason: fmt.Sprintf("needs a value for %s", op)}
		}
		raw := json.RawMessage(value.Raw)
		operation["value"] = &raw
	case policyv1alpha1.OverriderOpRemove:
	default:
		return nil, fmt.Errorf("operator %q is not add, remove or replace", op)
	}
	out, err := jsonpatch.Patch{operation}.ApplyWithOptions(doc, patchOptions())
	if err != nil {
		return nil, explainPatchError(op, path, err)
	}
	return out, nil
}

// explainPatchError turns json-patch's messages into "path P does not exist"
// and the like, keeping the library's error as the cause.
func explainPatchError(op policyv1alpha1.OverriderOperator, path string, err error) error {
	missing := errors.Is(err, jsonpatch.ErrMissing)
	badIndex := errors.Is(err, jsonpatch.ErrInvalidIndex)
	switch {
	case op == policyv1alpha1.OverriderOpAdd && missing:
		return missingParent(path)
	case op == policyv1alpha1.OverriderOpAdd && badIndex:
		return &pathError{Path: path, Reason: "cannot be added: array index out of range"}
	case missing || badIndex:
		return notFound(path)
	default:
		return &pathError{Path: path, Reason: fmt.Sprintf("cannot be patched with %s", op), Err: err}
	}
}

func rawJSON(s string) *json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	raw := json.RawMessage(b)
	return &raw
}
