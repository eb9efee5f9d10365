package overrides

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Paths no overrider may address, because they would change what an
// object is rather than how it is configured:
//
//   - /apiVersion, /kind, /metadata/name, /metadata/namespace: the object's
//     identity. A template is the same object in every member; an override
//     that renamed it, moved it to another namespace or made it another kind
//     would let a namespaced policy write anywhere in the member.
//   - /metadata/ownerReferences and anything under it: owner references
//     name objects by UID in the cluster that holds them. The hub's are
//     stripped from every manifest, so an override of them has no effect or,
//     pointing at a member object's UID, would hand the object's lifetime to
//     the member's garbage collector.
//   - /metadata itself, which holds all of them.
//
// Pointers are compared after RFC 6901 decoding, token by token and
// case-sensitively, as JSON keys are: /metadata~1name is a key named
// "metadata/name", not the name.
var identityPaths = [][]string{
	{"apiVersion"},
	{"kind"},
	{"metadata", "name"},
	{"metadata", "namespace"},
	{"metadata", "ownerReferences"},
}

// addressesIdentity reports whether the pointer p addresses an identity
// path, something under /metadata/ownerReferences, or a parent of either.
func addressesIdentity(p string) bool {
	ptr, err := parsePointer(p)
	if err != nil {
		return false // the schema's pattern refuses it, with its own message
	}
	for _, id := range identityPaths {
		n := min(len(id), len(ptr.tokens))
		if !slices.Equal(id[:n], ptr.tokens[:n]) {
			continue
		}
		switch {
		case len(ptr.tokens) <= len(id):
			return true // the path itself or a parent of it
		case id[len(id)-1] == "ownerReferences":
			return true // inside the owner references
		}
	}
	return false
}

// identityDetail is what a refused path is told.
func identityDetail(p string) string {
	return fmt.Sprintf("%s would change the object's identity or ownership (apiVersion, kind, metadata.name, metadata.namespace, metadata.ownerReferences): overriders customise an object, they cannot make it another object", p)
}

// ValidateIdentityPaths refuses overriders whose paths address an object's
// identity or owner references (see identityPaths), with the field path of
// each: the plaintext path, the fieldOverrider's fieldPath and the image
// overrider's predicate path, in overrideRules and in the deprecated
// spec.overriders alike. Paths inside a fieldOverrider's embedded document
// (subPath) are the document's own and are not checked here; the rendered
// objects are checked again where Works are rendered (internal/tenancy).
func ValidateIdentityPaths(spec *policyv1alpha1.OverrideSpec, fld *field.Path) field.ErrorList {
	errs := validateOverriders(&spec.Overriders, fld.Child("overriders"))
	for i := range spec.OverrideRules {
		errs = append(errs, validateOverriders(&spec.OverrideRules[i].Overriders, fld.Child("overrideRules").Index(i).Child("overriders"))...)
	}
	return errs
}

func validateOverriders(o *policyv1alpha1.Overriders, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(p string, at *field.Path) {
		if addressesIdentity(p) {
			errs = append(errs, field.Forbidden(at, identityDetail(p)))
		}
	}
	for i, pt := range o.Plaintext {
		check(pt.Path, fld.Child("plaintext").Index(i).Child("path"))
	}
	for i, f := range o.FieldOverrider {
		check(f.FieldPath, fld.Child("fieldOverrider").Index(i).Child("fieldPath"))
	}
	for i, im := range o.ImageOverrider {
		if im.Predicate != nil {
			check(im.Predicate.Path, fld.Child("imageOverrider").Index(i).Child("predicate", "path"))
		}
	}
	return errs
}
