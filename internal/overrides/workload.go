package overrides

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// podSpecFields is where the pod spec of a workload kind lives, as the
// interpreter knows it. Image, command and args overriders without a path
// know these kinds only.
func podSpecFields(obj *unstructured.Unstructured) ([]string, bool) {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return nil, false
	}
	return interpreter.PodSpecPath(schema.GroupKind{Group: gv.Group, Kind: obj.GetKind()})
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
