package overrides

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestAddressesIdentity(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/apiVersion", true},
		{"/kind", true},
		{"/metadata/name", true},
		{"/metadata/namespace", true},
		{"/metadata", true},
		{"/metadata/ownerReferences", true},
		{"/metadata/ownerReferences/0", true},
		{"/metadata/ownerReferences/0/uid", true},
		{"/metadata/ownerReferences/-", true},
		{"/metadata/labels", false},
		{"/metadata/labels/app", false},
		{"/metadata/annotations/name", false},
		{"/metadata/generateName", false},
		{"/metadata/name/x", false}, // inside a string: the patch fails on its own
		{"/metadata~1name", false},  // a key named "metadata/name"
		{"/Kind", false},            // JSON keys are case-sensitive
		{"/spec/replicas", false},
		{"/data/name", false},
		{"/spec/template/metadata/name", false},
		{"/", false},
		{"metadata/name", false}, // not a pointer: the schema refuses it
	}
	for _, tt := range tests {
		if got := addressesIdentity(tt.path); got != tt.want {
			t.Errorf("addressesIdentity(%q) = %t, want %t", tt.path, got, tt.want)
		}
	}
}

func TestValidateIdentityPathsNamesEveryRefusedField(t *testing.T) {
	spec := &policyv1alpha1.OverrideSpec{
		Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/kind", Operator: policyv1alpha1.OverriderOpReplace}}},
		OverrideRules: []policyv1alpha1.RuleWithCluster{
			{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{
				{Path: "/spec/replicas", Operator: policyv1alpha1.OverriderOpReplace},
				{Path: "/metadata/namespace", Operator: policyv1alpha1.OverriderOpReplace},
			}}},
			{Overriders: policyv1alpha1.Overriders{
				FieldOverrider: []policyv1alpha1.FieldOverrider{{FieldPath: "/data/config.yaml"}, {FieldPath: "/metadata/name"}},
				ImageOverrider: []policyv1alpha1.ImageOverrider{
					{Predicate: &policyv1alpha1.ImagePredicate{Path: "/spec/template/spec/containers/0/image"}},
					{Predicate: &policyv1alpha1.ImagePredicate{Path: "/apiVersion"}},
					{},
				},
				LabelsOverrider: []policyv1alpha1.LabelAnnotationOverrider{{Operator: policyv1alpha1.OverriderOpAdd, Value: map[string]string{"name": "x"}}},
			}},
			{Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/metadata/ownerReferences/0", Operator: policyv1alpha1.OverriderOpAdd}}}},
		},
	}
	got := ValidateIdentityPaths(spec, field.NewPath("spec"))
	want := []string{
		"spec.overriders.plaintext[0].path",
		"spec.overrideRules[0].overriders.plaintext[1].path",
		"spec.overrideRules[1].overriders.fieldOverrider[1].fieldPath",
		"spec.overrideRules[1].overriders.imageOverrider[1].predicate.path",
		"spec.overrideRules[2].overriders.plaintext[0].path",
	}
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d: %v", len(got), len(want), got)
	}
	for i, e := range got {
		if e.Field != want[i] || e.Type != field.ErrorTypeForbidden {
			t.Errorf("error %d: %s %s, want Forbidden at %s", i, e.Type, e.Field, want[i])
		}
	}
	if d := got[1].Detail; d != "/metadata/namespace would change the object's identity or ownership (apiVersion, kind, metadata.name, metadata.namespace, metadata.ownerReferences): overriders customise an object, they cannot make it another object" {
		t.Errorf("detail %q", d)
	}
}
