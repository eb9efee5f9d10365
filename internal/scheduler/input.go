package scheduler

import (
	"slices"
	"time"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Input is one binding to place.
type Input struct {
	// Key identifies the binding in the assumed ledger, e.g. "namespace/name".
	Key string
	// Namespace is asked of the quota checker; empty for cluster-scoped templates.
	Namespace string

	// APIVersion and Kind of the template, checked against members' API enablements.
	APIVersion string
	Kind       string

	// Replicas desired; 0 for templates without replicas.
	Replicas int32
	// Requirements of one replica; nil requests only a Pod slot.
	Requirements *workv1alpha1.ReplicaRequirements
	// Placement from the policy; nil places on every member, Duplicated.
	Placement *policyv1alpha1.Placement

	// Current is the placement before this decision: spec.clusters
	// without the members being evicted (Staying).
	Current []workv1alpha1.TargetCluster
	// EvictedFrom lists members the binding is leaving (gracefulEvictionTasks).
	EvictedFrom []string
	// ObservedAffinityName is the affinity term in force at the last decision;
	// fallback resumes from it instead of jumping back to the first term.
	ObservedAffinityName string
	// Rebalance asks for a placement from scratch instead of the
	// least-movement update, and restarts affinity fallback at the first term.
	Rebalance bool
}

// Staying is spec.clusters without the members the binding is being
// evicted from: the eviction records a graceful eviction task and leaves
// spec.clusters to the scheduler, which starts each decision from this.
func Staying(spec *workv1alpha1.ResourceBindingSpec) []workv1alpha1.TargetCluster {
	if len(spec.GracefulEvictionTasks) == 0 {
		return spec.Clusters
	}
	var out []workv1alpha1.TargetCluster
	for _, c := range spec.Clusters {
		if !slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == c.Name }) {
			out = append(out, c)
		}
	}
	return out
}

// FailbackTriggeredAt is when failback asked for a placement from scratch
// (work.FailbackTriggeredAtAnnotation), if it did and the time parses.
func FailbackTriggeredAt(annotations map[string]string) (time.Time, bool) {
	v, ok := annotations[workv1alpha1.FailbackTriggeredAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	return at, err == nil
}

// InputFromBinding reads a ResourceBinding or ClusterResourceBinding.
// Rebalance is set when spec.rescheduleTriggeredAt is later than
// status.lastScheduledTime.
func InputFromBinding(key string, spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus) Input {
	in := Input{
		Key:                  key,
		Namespace:            spec.Resource.Namespace,
		APIVersion:           spec.Resource.APIVersion,
		Kind:                 spec.Resource.Kind,
		Replicas:             spec.Replicas,
		Requirements:         spec.ReplicaRequirements,
		Placement:            spec.Placement,
		Current:              Staying(spec),
		ObservedAffinityName: status.SchedulerObservedAffinityName,
	}
	for _, task := range spec.GracefulEvictionTasks {
		in.EvictedFrom = append(in.EvictedFrom, task.FromCluster)
	}
	if t := spec.RescheduleTriggeredAt; t != nil {
		in.Rebalance = status.LastScheduledTime == nil || t.After(status.LastScheduledTime.Time)
	}
	return in
}
