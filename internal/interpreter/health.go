package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// InterpretHealth returns the health of an object applied to a member,
// judged from its own status, and when not Healthy, why: workloads are
// Healthy when their controller has seen the current generation and every
// desired replica is up to date, ready and available; a Job while it has
// active Pods or once it succeeded; every other kind once applied.
func InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	switch groupKind(obj) {
	case deploymentKind, statefulSetKind:
		return workload(obj, "updatedReplicas", "readyReplicas", "availableReplicas")
	case replicaSetKind:
		return workload(obj, "readyReplicas", "availableReplicas")
	case jobKind:
		return job(obj)
	}
	return workv1alpha1.ResourceHealthy, ""
}

func workload(obj *unstructured.Unstructured, counts ...string) (workv1alpha1.ResourceHealth, string) {
	if observed := statusInt(obj, "observedGeneration"); observed < obj.GetGeneration() {
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("generation %d not yet observed (observed %d)", obj.GetGeneration(), observed)
	}
	desired := int64(1) // the API server's default
	if n, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
		desired = n
	}
	for _, field := range counts {
		if got := statusInt(obj, field); got != desired {
			return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("%s %d of %d", field, got, desired)
		}
	}
	return workv1alpha1.ResourceHealthy, ""
}

func job(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Failed" && cond["status"] == "True" {
			return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("failed: %v", cond["message"])
		}
	}
	if statusInt(obj, "succeeded") > 0 || statusInt(obj, "active") > 0 {
		return workv1alpha1.ResourceHealthy, ""
	}
	return workv1alpha1.ResourceUnhealthy, "no active or succeeded Pods yet"
}

func statusInt(obj *unstructured.Unstructured, field string) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
	return n
}
