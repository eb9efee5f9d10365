package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// InterpretHealth returns the health of an object applied to a member,
// judged from its own status, and when not Healthy, why:
//
//   - Deployment, StatefulSet, ReplicaSet: the controller has seen the
//     current generation and every desired replica is up to date (not
//     ReplicaSet), ready and available;
//   - DaemonSet: the controller has seen the current generation, every
//     node that should run a Pod runs an updated one, and every updated
//     one is available;
//   - Job: while it has active Pods or once it succeeded, and not once it
//     failed;
//   - Pod: Succeeded, or Running with its Ready condition True;
//   - Service: of type LoadBalancer, once the load balancer has an IP or a
//     hostname; of any other type, once applied;
//   - Ingress: once its load balancer has an IP or a hostname;
//   - PersistentVolumeClaim: once Bound;
//   - PodDisruptionBudget: while currentHealthy is at least desiredHealthy;
//   - every other kind (CronJob, HorizontalPodAutoscaler, ConfigMap...)
//     once applied.
//
// As Karmada's built-in interpreter, but for two kinds: Karmada has no
// built-in Job health (every Job is Healthy there), and it judges a
// Deployment or StatefulSet Healthy once updatedReplicas reaches
// spec.replicas and availableReplicas reaches updatedReplicas (a
// ReplicaSet once availableReplicas reaches spec.replicas) rather than by
// exact counts, so it is Healthy while Pods of an old revision are still
// counted at the end of a rollout.
func InterpretHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	switch groupKind(obj) {
	case deploymentKind, statefulSetKind:
		return workload(obj, "updatedReplicas", "readyReplicas", "availableReplicas")
	case replicaSetKind:
		return workload(obj, "readyReplicas", "availableReplicas")
	case daemonSetKind:
		return daemonSetHealth(obj)
	case jobKind:
		return job(obj)
	case podKind:
		return podHealth(obj)
	case serviceKind:
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t != "LoadBalancer" {
			return workv1alpha1.ResourceHealthy, ""
		}
		return loadBalanced(obj, "load balancer not yet provisioned: no status.loadBalancer.ingress with an IP or hostname")
	case ingressKind:
		return loadBalanced(obj, "no address yet: no status.loadBalancer.ingress with an IP or hostname")
	case pvcKind:
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		switch phase {
		case "Bound":
			return workv1alpha1.ResourceHealthy, ""
		case "":
			return workv1alpha1.ResourceUnhealthy, "not yet Bound"
		}
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("phase %s, not Bound", phase)
	case podDisruptionBudgetKind:
		current, desired := statusInt(obj, "currentHealthy"), statusInt(obj, "desiredHealthy")
		if current < desired {
			return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("currentHealthy %d of desiredHealthy %d", current, desired)
		}
		return workv1alpha1.ResourceHealthy, ""
	}
	return workv1alpha1.ResourceHealthy, ""
}

func workload(obj *unstructured.Unstructured, counts ...string) (workv1alpha1.ResourceHealth, string) {
	if h, msg := generationObserved(obj); h != workv1alpha1.ResourceHealthy {
		return h, msg
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

// generationObserved is Unhealthy while the object's controller has not
// seen its current generation.
func generationObserved(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	if observed := statusInt(obj, "observedGeneration"); observed < obj.GetGeneration() {
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("generation %d not yet observed (observed %d)", obj.GetGeneration(), observed)
	}
	return workv1alpha1.ResourceHealthy, ""
}

func daemonSetHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	if h, msg := generationObserved(obj); h != workv1alpha1.ResourceHealthy {
		return h, msg
	}
	desired, updated := statusInt(obj, "desiredNumberScheduled"), statusInt(obj, "updatedNumberScheduled")
	if updated < desired {
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("updatedNumberScheduled %d of %d", updated, desired)
	}
	if available := statusInt(obj, "numberAvailable"); available < updated {
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("numberAvailable %d of %d updated", available, updated)
	}
	return workv1alpha1.ResourceHealthy, ""
}

func job(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	if cond := statusCondition(obj, "Failed"); cond != nil && cond["status"] == "True" {
		return workv1alpha1.ResourceUnhealthy, fmt.Sprintf("failed: %v", cond["message"])
	}
	if statusInt(obj, "succeeded") > 0 || statusInt(obj, "active") > 0 {
		return workv1alpha1.ResourceHealthy, ""
	}
	return workv1alpha1.ResourceUnhealthy, "no active or succeeded Pods yet"
}

func podHealth(obj *unstructured.Unstructured) (workv1alpha1.ResourceHealth, string) {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return workv1alpha1.ResourceHealthy, ""
	case "Running":
		if cond := statusCondition(obj, "Ready"); cond != nil && cond["status"] == "True" {
			return workv1alpha1.ResourceHealthy, ""
		}
		return workv1alpha1.ResourceUnhealthy, "Running but not Ready"
	case "":
		return workv1alpha1.ResourceUnhealthy, "no phase yet"
	}
	return workv1alpha1.ResourceUnhealthy, "phase " + phase
}

// loadBalanced is Healthy once status.loadBalancer.ingress has an entry
// with an IP or a hostname, Unhealthy with notYet before.
func loadBalanced(obj *unstructured.Unstructured, notYet string) (workv1alpha1.ResourceHealth, string) {
	ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress")
	for _, i := range ingress {
		entry, _ := i.(map[string]any)
		if ip, _ := entry["ip"].(string); ip != "" {
			return workv1alpha1.ResourceHealthy, ""
		}
		if host, _ := entry["hostname"].(string); host != "" {
			return workv1alpha1.ResourceHealthy, ""
		}
	}
	return workv1alpha1.ResourceUnhealthy, notYet
}

// statusCondition is the status condition of the type given, nil when
// there is none.
func statusCondition(obj *unstructured.Unstructured, conditionType string) map[string]any {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if cond, _ := c.(map[string]any); cond["type"] == conditionType {
			return cond
		}
	}
	return nil
}

func statusInt(obj *unstructured.Unstructured, field string) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
	return n
}
