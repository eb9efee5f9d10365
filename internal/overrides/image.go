package overrides

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// applyImage changes one component of the image at the predicate's path or,
// without a predicate, of every container and init container image of a
// known workload kind (other kinds are left alone).
func applyImage(obj *unstructured.Unstructured, o *policyv1alpha1.ImageOverrider) error {
	if err := validateImageOverrider(o); err != nil {
		return err
	}
	if o.Predicate != nil {
		p, err := parsePointer(o.Predicate.Path)
		if err != nil {
			return err
		}
		value, err := p.get(obj.Object)
		if err != nil {
			return err
		}
		image, err := overrideImageAt(p.raw, value, o)
		if err != nil {
			return err
		}
		return p.set(obj.Object, image)
	}
	containers, _, err := podContainers(obj)
	if err != nil {
		return err
	}
	for _, c := range containers {
		value, found := c.fields["image"]
		if !found {
			continue // nothing to override; the API server rejects it anyway
		}
		image, err := overrideImageAt(c.path+"/image", value, o)
		if err != nil {
			return err
		}
		c.fields["image"] = image
	}
	return nil
}

// validateImageOverrider applies the API's rules, which the CRD enforces
// but a caller of this package may not have gone through.
func validateImageOverrider(o *policyv1alpha1.ImageOverrider) error {
	switch o.Component {
	case policyv1alpha1.Registry, policyv1alpha1.Repository, policyv1alpha1.Tag:
	default:
		return fmt.Errorf("component %q is not Registry, Repository or Tag", o.Component)
	}
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
		if o.Value == "" {
			return fmt.Errorf("operator %s needs a value", o.Operator)
		}
	case policyv1alpha1.OverriderOpRemove:
	default:
		return fmt.Errorf("operator %q is not add, remove or replace", o.Operator)
	}
	return nil
}

func overrideImageAt(path string, value any, o *policyv1alpha1.ImageOverrider) (string, error) {
	image, ok := value.(string)
	if !ok {
		return "", &pathError{Path: path, Reason: fmt.Sprintf("is not a string but %T", value)}
	}
	out, err := overrideImage(image, o)
	if err != nil {
		return "", &pathError{Path: path, Reason: fmt.Sprintf("holds image %q, which cannot be overridden", image), Err: err}
	}
	return out, nil
}

// overrideImage applies Karmada's semantics: add appends the value to the
// component's text (registry "a.io" add ".cn" gives "a.io.cn"), replace sets
// it, remove clears it. The result must still be a valid reference.
func overrideImage(image string, o *policyv1alpha1.ImageOverrider) (string, error) {
	ref, err := parseImageRef(image)
	if err != nil {
		return "", err
	}
	switch o.Component {
	case policyv1alpha1.Registry:
		ref.registry = editComponent(ref.registry, o)
	case policyv1alpha1.Repository:
		ref.repository = editComponent(ref.repository, o)
	case policyv1alpha1.Tag:
		if o.Operator == policyv1alpha1.OverriderOpRemove {
			ref.removeTagOrDigest()
		} else if err := ref.setTagOrDigest(editComponent(ref.tagOrDigest(), o)); err != nil {
			return "", err
		}
	}
	out := ref.String()
	if _, err := parseImageRef(out); err != nil {
		return "", fmt.Errorf("the result %q is not a valid image reference: %w", out, err)
	}
	return out, nil
}

func editComponent(current string, o *policyv1alpha1.ImageOverrider) string {
	switch o.Operator {
	case policyv1alpha1.OverriderOpAdd:
		return current + o.Value
	case policyv1alpha1.OverriderOpReplace:
		return o.Value
	default: // remove
		return ""
	}
}
