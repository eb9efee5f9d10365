package overrides

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// overriderStep is one overrider list of a rule.
type overriderStep struct {
	name  string // the list's JSON field name, for errors
	count int
	apply func(i int) error
}

// failedOverrider locates the overrider that failed within a rule.
type failedOverrider struct {
	name  string
	index int
	err   error
}

// applyOverriders applies one rule's overriders in Karmada's order (see
// karmada-io/karmada pkg/util/overridemanager/overridemanager.go,
// applyPolicyOverriders, and the Overriders doc comment in its
// pkg/apis/policy/v1alpha1/override_types.go): image, command, args,
// labels, annotations, field, and plaintext last.
func applyOverriders(obj *unstructured.Unstructured, o *policyv1alpha1.Overriders) *failedOverrider {
	steps := []overriderStep{
		{"imageOverrider", len(o.ImageOverrider), func(i int) error { return applyImage(obj, &o.ImageOverrider[i]) }},
		{"commandOverrider", len(o.CommandOverrider), func(i int) error { return applyCommandArgs(obj, fieldCommand, &o.CommandOverrider[i]) }},
		{"argsOverrider", len(o.ArgsOverrider), func(i int) error { return applyCommandArgs(obj, fieldArgs, &o.ArgsOverrider[i]) }},
		{"labelsOverrider", len(o.LabelsOverrider), func(i int) error { return applyMetadataMap(obj, fieldLabels, &o.LabelsOverrider[i]) }},
		{"annotationsOverrider", len(o.AnnotationsOverrider), func(i int) error { return applyMetadataMap(obj, fieldAnnotations, &o.AnnotationsOverrider[i]) }},
		{"fieldOverrider", len(o.FieldOverrider), func(i int) error { return applyField(obj, &o.FieldOverrider[i]) }},
		{"plaintext", len(o.Plaintext), func(i int) error { return applyPlaintext(obj, &o.Plaintext[i]) }},
	}
	for _, step := range steps {
		for i := range step.count {
			if err := step.apply(i); err != nil {
				return &failedOverrider{name: step.name, index: i, err: err}
			}
		}
	}
	return nil
}

// isEmpty reports whether the overriders change nothing at all.
func isEmpty(o *policyv1alpha1.Overriders) bool {
	return len(o.Plaintext) == 0 && len(o.ImageOverrider) == 0 &&
		len(o.CommandOverrider) == 0 && len(o.ArgsOverrider) == 0 &&
		len(o.LabelsOverrider) == 0 && len(o.AnnotationsOverrider) == 0 &&
		len(o.FieldOverrider) == 0
}
