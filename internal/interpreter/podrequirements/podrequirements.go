// Package podrequirements computes what one Pod made from a pod template
// needs, for the interpreter's built-in kinds and for the Lua helper
// kube.accuratePodRequirements alike (luavm cannot import the interpreter,
// which imports it).
package podrequirements

import (
	corev1 "k8s.io/api/core/v1"
	podresource "k8s.io/component-helpers/resource"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Of is what one Pod of the template needs: requests and limits computed
// as the kube-scheduler does (containers summed, init containers as a
// maximum, sidecars, pod-level resources, overhead), nil when there are
// none, and where it may run (nodeSelector, tolerations and required node
// affinity; no NodeClaim when there are none), in the namespace given.
func Of(namespace string, template *corev1.PodTemplateSpec) *workv1alpha1.ReplicaRequirements {
	pod := &corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	spec := &template.Spec
	rr := &workv1alpha1.ReplicaRequirements{
		Namespace:         namespace,
		PriorityClassName: spec.PriorityClassName,
		ResourceRequest:   nonEmpty(podresource.PodRequests(pod, podresource.PodResourcesOptions{})),
		ResourceLimits:    nonEmpty(podresource.PodLimits(pod, podresource.PodResourcesOptions{})),
	}
	claim := &workv1alpha1.NodeClaim{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
		claim.HardNodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(claim.NodeSelector) > 0 || len(claim.Tolerations) > 0 || claim.HardNodeAffinity != nil {
		rr.NodeClaim = claim
	}
	return rr
}

func nonEmpty(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	return l
}
