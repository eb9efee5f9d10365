package interpreter

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The built-in kinds, and where each keeps what the operations read.
var (
	podKind                   = schema.GroupKind{Kind: "Pod"}
	replicationControllerKind = schema.GroupKind{Kind: "ReplicationController"}
	deploymentKind            = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind           = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	replicaSetKind            = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	daemonSetKind             = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	jobKind                   = schema.GroupKind{Group: "batch", Kind: "Job"}
	cronJobKind               = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	serviceKind               = schema.GroupKind{Kind: "Service"}
	pvcKind                   = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	pvKind                    = schema.GroupKind{Kind: "PersistentVolume"}
	ingressKind               = schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	podDisruptionBudgetKind   = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
	hpaKind                   = schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}
)

func groupKind(obj *unstructured.Unstructured) schema.GroupKind {
	return obj.GroupVersionKind().GroupKind()
}

// field is where a kind keeps the replica count Flotilla divides.
func field(gk schema.GroupKind) ([]string, bool) {
	switch gk {
	case deploymentKind, statefulSetKind, replicaSetKind:
		return []string{"spec", "replicas"}, true
	case jobKind:
		return []string{"spec", "parallelism"}, true
	}
	return nil, false
}

// PodSpecPath is where a kind keeps the spec of the Pods it makes; ok is
// false for kinds that make none.
func PodSpecPath(gk schema.GroupKind) (path []string, ok bool) {
	template := []string{"spec", "template", "spec"}
	switch gk {
	case podKind:
		return []string{"spec"}, true
	case deploymentKind, statefulSetKind, replicaSetKind, daemonSetKind, jobKind:
		return template, true
	case cronJobKind:
		return append([]string{"spec", "jobTemplate"}, template...), true
	}
	return nil, false
}
