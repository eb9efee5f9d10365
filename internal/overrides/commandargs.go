package overrides

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Container fields the command and args overriders change.
const (
	fieldCommand = "command"
	fieldArgs    = "args"
)

// applyCommandArgs appends to, or removes every occurrence of the listed
// items from, the command or args of the named container. As in Karmada, a
// kind without a known pod spec, or a missing container, is a no-op: one
// policy may cover workloads that do not all run that container.
func applyCommandArgs(obj *unstructured.Unstructured, field string, o *policyv1alpha1.CommandArgsOverrider) error {
	if o.ContainerName == "" {
		return fmt.Errorf("containerName is empty")
	}
	if o.Operator != policyv1alpha1.OverriderOpAdd && o.Operator != policyv1alpha1.OverriderOpRemove {
		return fmt.Errorf("operator %q is not add or remove", o.Operator)
	}
	containers, _, err := podContainers(obj)
	if err != nil {
		return err
	}
	for _, c := range containers {
		if c.fields["name"] != o.ContainerName {
			continue
		}
		path := c.path + "/" + field
		current, present := c.fields[field]
		items, err := stringList(path, current)
		if err != nil {
			return err
		}
		switch o.Operator {
		case policyv1alpha1.OverriderOpAdd:
			if len(o.Value) == 0 {
				continue
			}
			items = append(items, o.Value...)
		case policyv1alpha1.OverriderOpRemove:
			if !present {
				continue // nothing to remove from; do not invent an empty list
			}
			items = slices.DeleteFunc(items, func(s string) bool { return slices.Contains(o.Value, s) })
		}
		list := make([]any, len(items))
		for i, s := range items {
			list[i] = s
		}
		c.fields[field] = list
	}
	return nil
}

// stringList reads a command or args list; nil reads as empty.
func stringList(path string, value any) ([]string, error) {
	if value == nil {
		return nil, nil
	}
	list, ok := value.([]any)
	if !ok {
		return nil, &pathError{Path: path, Reason: fmt.Sprintf("is not a list but %T", value)}
	}
	out := make([]string, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, &pathError{Path: fmt.Sprintf("%s/%d", path, i), Reason: fmt.Sprintf("is not a string but %T", item)}
		}
		out[i] = s
	}
	return out, nil
}
