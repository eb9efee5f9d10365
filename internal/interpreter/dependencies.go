package interpreter

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kinds of dependency, all in the core group.
const (
	ConfigMapKind             = "ConfigMap"
	SecretKind                = "Secret"
	ServiceAccountKind        = "ServiceAccount"
	PersistentVolumeClaimKind = "PersistentVolumeClaim"
)

// DependencyKinds are the kinds Flotilla propagates as dependencies.
var DependencyKinds = []string{ConfigMapKind, SecretKind, ServiceAccountKind, PersistentVolumeClaimKind}

// Dependency is one dependency in the workload's namespace.
type Dependency struct {
	Kind string
	Name string
}

// GetDependencies lists the dependencies of a workload, sorted by kind and name, each
// once. Kinds without a pod template have none. The ServiceAccount
// "default" is not a dependency: every namespace of every member has one.
func GetDependencies(obj *unstructured.Unstructured) ([]Dependency, error) {
	path, ok := PodSpecPath(groupKind(obj))
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

func ofPodSpec(spec *corev1.PodSpec) []Dependency {
	var refs []Dependency
	add := func(kind, name string) {
		if name != "" {
			refs = append(refs, Dependency{Kind: kind, Name: name})
		}
	}
	if spec.ServiceAccountName != "" && spec.ServiceAccountName != "default" {
		add(ServiceAccountKind, spec.ServiceAccountName)
	}
	for _, s := range spec.ImagePullSecrets {
		add(SecretKind, s.Name)
	}
	for _, v := range spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(ConfigMapKind, v.ConfigMap.Name)
		case v.Secret != nil:
			add(SecretKind, v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add(PersistentVolumeClaimKind, v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add(ConfigMapKind, p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add(SecretKind, p.Secret.Name)
				}
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				add(ConfigMapKind, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add(SecretKind, from.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				add(ConfigMapKind, ref.Name)
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				add(SecretKind, ref.Name)
			}
		}
	}
	sortDependencies(refs)
	return slices.Compact(refs)
}

func sortDependencies(refs []Dependency) {
	slices.SortFunc(refs, func(a, b Dependency) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}
