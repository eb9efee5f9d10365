package overrides

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// patchStep is one operation of a fieldOverrider, JSON or YAML alike.
type patchStep struct {
	op      policyv1alpha1.OverriderOperator
	subPath string
	value   apiextensionsv1.JSON
}

// applyField patches the JSON or YAML document held in the string at
// fieldPath, and writes it back in the same format. As in Karmada, JSON
// comes back compact with its key order kept; YAML comes back with keys
// sorted and comments dropped, since it round-trips through JSON.
func applyField(obj *unstructured.Unstructured, o *policyv1alpha1.FieldOverrider) error {
	p, err := parsePointer(o.FieldPath)
	if err != nil {
		return err
	}
	value, err := p.get(obj.Object)
	if err != nil {
		return err
	}
	text, ok := value.(string)
	if !ok {
		return &pathError{Path: p.raw, Reason: fmt.Sprintf("is not a string but %T", value)}
	}
	var out []byte
	switch {
	case len(o.JSON) > 0 && len(o.YAML) > 0:
		return &pathError{Path: p.raw, Reason: "has both json and yaml operations; give one"}
	case len(o.YAML) > 0:
		steps := make([]patchStep, len(o.YAML))
		for i, s := range o.YAML {
			steps[i] = patchStep{s.Operator, s.SubPath, s.Value}
		}
		out, err = patchYAML(p.raw, text, steps)
	case len(o.JSON) > 0:
		steps := make([]patchStep, len(o.JSON))
		for i, s := range o.JSON {
			steps[i] = patchStep{s.Operator, s.SubPath, s.Value}
		}
		out, err = patchJSON(p.raw, "json", []byte(text), steps)
	default:
		return &pathError{Path: p.raw, Reason: "has neither json nor yaml operations; give one"}
	}
	if err != nil {
		return err
	}
	return p.set(obj.Object, string(out))
}

func patchYAML(path, text string, steps []patchStep) ([]byte, error) {
	doc, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, &pathError{Path: path, Reason: "does not hold a YAML document", Err: err}
	}
	doc, err = patchJSON(path, "yaml", doc, steps)
	if err != nil {
		return nil, err
	}
	out, err := yaml.JSONToYAML(doc)
	if err != nil {
		return nil, &pathError{Path: path, Reason: "cannot be written back as YAML", Err: err}
	}
	return out, nil
}

// patchJSON applies the steps in order; list names them in errors, e.g.
// "path /data/config.yaml yaml[1]: path /server/port does not exist".
func patchJSON(path, list string, doc []byte, steps []patchStep) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, &pathError{Path: path, Reason: "does not hold a JSON document"}
	}
	for i, s := range steps {
		var err error
		if doc, err = applyPatchOp(doc, s.op, s.subPath, s.value); err != nil {
			return nil, &pathError{Path: path, Reason: fmt.Sprintf("%s[%d]", list, i), Err: err}
		}
	}
	return doc, nil
}
