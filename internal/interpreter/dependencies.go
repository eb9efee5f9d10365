// Package dependencies lists the objects a workload's Pods reference in
// their own namespace — ConfigMaps, Secrets, ServiceAccounts and
// PersistentVolumeClaims — so that propagateDeps can carry them to the same
// members as the workload. It is pure: it reads the template only.
package dependencies

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds of dependency, all in the core group.
const (
	ConfigMap             = "ConfigMap"
	Secret                = "Secret"
	ServiceAccount        = "ServiceAccount"
	PersistentVolumeClaim = "PersistentVolumeClaim"
)

// Reference is one dependency in the workload's namespace.
type Reference struct {
	Kind string
	Name string
}

// podSpecPath is where a workload kind keeps its pod spec; ok is false for
// kinds that have none.
func podSpecPath(obj *unstructured.Unstructured) (path []string, ok bool) {
	template := []string{"spec", "template", "spec"}
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Pod"}:
		return []string{"spec"}, true
	case schema.GroupKind{Group: "apps", Kind: "Deployment"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}:
		return template, true
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return append([]string{"spec", "jobTemplate"}, template...), true
	}
	return nil, false
}

// Of lists the dependencies of a workload, sorted by kind and name, each
// once. Kinds without a pod template have none. The ServiceAccount
// "default" is not a dependency: every namespace of every member has one.
func Of(obj *unstructured.Unstructured) ([]Reference, error) {
	path, ok := podSpecPath(obj)
	if !ok {
		return nil, nil
	}
	raw, found, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("read the pod spec of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if !found {
		return nil, nil
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil, fmt.Errorf("read the pod spec of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return ofPodSpec(spec), nil
}

func ofPodSpec(spec *corev1.PodSpec) []Reference {
	var refs []Reference
	add := func(kind, name string) {
		if name != "" {
			refs = append(refs, Reference{Kind: kind, Name: name})
		}
	}
	if spec.ServiceAccountName != "" && spec.ServiceAccountName != "default" {
		add(ServiceAccount, spec.ServiceAccountName)
	}
	for _, s := range spec.ImagePullSecrets {
		add(Secret, s.Name)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(ConfigMap, v.ConfigMap.Name)
		case v.Secret != nil:
			add(Secret, v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add(PersistentVolumeClaim, v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add(ConfigMap, p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add(Secret, p.Secret.Name)
				}
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				add(ConfigMap, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add(Secret, from.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				add(ConfigMap, ref.Name)
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				add(Secret, ref.Name)
			}
		}
	}
	slices.SortFunc(refs, func(a, b Reference) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return slices.Compact(refs)
}
