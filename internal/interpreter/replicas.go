package interpreter

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter/podrequirements"
)

// HasReplicas reports whether the template's kind carries a replica count
// that Flotilla divides between members.
func HasReplicas(obj *unstructured.Unstructured) bool {
	_, ok := field(groupKind(obj))
	return ok
}

// GetReplicas returns the template's desired replicas and what one replica
// needs. Kinds without replicas give 0 and nil.
func GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	var (
		replicas *int32
		pod      *corev1.PodTemplateSpec
	)
	switch groupKind(obj) {
	case deploymentKind:
		d := &appsv1.Deployment{}
		if err := fromUnstructured(obj, d); err != nil {
			return 0, nil, err
		}
		replicas, pod = d.Spec.Replicas, &d.Spec.Template
	case statefulSetKind:
		s := &appsv1.StatefulSet{}
		if err := fromUnstructured(obj, s); err != nil {
			return 0, nil, err
		}
		replicas, pod = s.Spec.Replicas, &s.Spec.Template
	case replicaSetKind:
		r := &appsv1.ReplicaSet{}
		if err := fromUnstructured(obj, r); err != nil {
			return 0, nil, err
		}
		replicas, pod = r.Spec.Replicas, &r.Spec.Template
	case jobKind:
		j := &batchv1.Job{}
		if err := fromUnstructured(obj, j); err != nil {
			return 0, nil, err
		}
		replicas, pod = j.Spec.Parallelism, &j.Spec.Template
	default:
		return 0, nil, nil
	}
	n := int32(1) // the API server's default for both fields
	if replicas != nil {
		n = *replicas
	}
	return n, podrequirements.Of(obj.GetNamespace(), pod), nil
}

func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("read %s %s as a %s: %w", obj.GetKind(), obj.GetName(), obj.GroupVersionKind(), err)
	}
	return nil
}

// ReviseReplica writes a member's share of replicas into the template rendered for
// it. It reports false, and changes nothing, for kinds without replicas.
func ReviseReplica(obj *unstructured.Unstructured, replicas int32) (bool, error) {
	f, ok := field(groupKind(obj))
	if !ok {
		return false, nil
	}
	if err := unstructured.SetNestedField(obj.Object, int64(replicas), f...); err != nil {
		return false, fmt.Errorf("set %s of %s %s: %w", joinPath(f), obj.GetKind(), obj.GetName(), err)
	}
	return true, nil
}

func joinPath(f []string) string {
	s := ""
	for _, p := range f {
		s += "." + p
	}
	return s
}

// Pods is how many Pods an object rendered into a member makes there and
// what one of them requests, as a member's ResourceQuota counts them: the
// replica count of the workload kinds GetReplicas knows (Deployment,
// StatefulSet, ReplicaSet, Job's parallelism), 1 for a Pod, spec.replicas
// of a ReplicationController. ok is false for every other kind, including
// those whose Pods cannot be told from the object alone (a DaemonSet makes
// one per node, a CronJob none until it runs).
func Pods(obj *unstructured.Unstructured) (n int64, req *workv1alpha1.ReplicaRequirements, ok bool, err error) {
	switch groupKind(obj) {
	case podKind:
		p := &corev1.Pod{}
		if err := fromUnstructured(obj, p); err != nil {
			return 0, nil, false, err
		}
		return 1, podrequirements.Of(obj.GetNamespace(), &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}), true, nil
	case replicationControllerKind:
		rc := &corev1.ReplicationController{}
		if err := fromUnstructured(obj, rc); err != nil {
			return 0, nil, false, err
		}
		n := int32(1)
		if rc.Spec.Replicas != nil {
			n = *rc.Spec.Replicas
		}
		if rc.Spec.Template == nil {
			return int64(n), nil, true, nil
		}
		return int64(n), podrequirements.Of(obj.GetNamespace(), rc.Spec.Template), true, nil
	}
	if !HasReplicas(obj) {
		return 0, nil, false, nil
	}
	r, rr, err := GetReplicas(obj)
	if err != nil {
		return 0, nil, false, err
	}
	return int64(r), rr, true, nil
}
