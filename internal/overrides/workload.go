package overrides

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// podSpecFields is where the pod spec of a workload kind lives. Image,
// command and args overriders without a path know these kinds only.
func podSpecFields(obj *unstructured.Unstructured) ([]string, bool) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return nil, false
	}
	template := []string{"spec", "template", "spec"}
	switch gk := (schema.GroupKind{Group: gv.Group, Kind: obj.GetKind()}); gk {
	case schema.GroupKind{Kind: "Pod"}:
		return []string{"spec"}, true
	case schema.GroupKind{Group: "apps", Kind: "Deployment"},
		schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}:
		return template, true
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return append([]string{"spec", "jobTemplate"}, template...), true
	}
	return nil, false
}

// container is one container of a pod spec, with the JSON pointer to it.
type container struct {
	path   string
	fields map[string]any // the object's own map: writes change the object
}

// podContainers lists the containers, then the init containers, of a known
// workload kind; ok is false for any other kind.
func podContainers(obj *unstructured.Unstructured) (containers []container, ok bool, err error) {
	spec, ok := podSpecFields(obj)
	if !ok {
		return nil, false, nil
	}
	for _, list := range []string{"containers", "initContainers"} {
		fields := append(append([]string{}, spec...), list)
		path := "/" + strings.Join(fields, "/")
		value, found, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
		if err != nil {
			return nil, true, &pathError{Path: path, Reason: "cannot be read", Err: err}
		}
		if !found || value == nil {
			continue
		}
		items, isList := value.([]any)
		if !isList {
			return nil, true, &pathError{Path: path, Reason: fmt.Sprintf("is not a list but %T", value)}
		}
		for i, item := range items {
			c, isMap := item.(map[string]any)
			if !isMap {
				return nil, true, &pathError{Path: fmt.Sprintf("%s/%d", path, i), Reason: fmt.Sprintf("is not an object but %T", item)}
			}
			containers = append(containers, container{path: fmt.Sprintf("%s/%d", path, i), fields: c})
		}
	}
	return containers, true, nil
}
