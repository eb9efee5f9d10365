package eviction

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// PurgeModeOf is the binding's failover.cluster.purgeMode, Gracefully by default.
func PurgeModeOf(f *policyv1alpha1.FailoverBehavior) policyv1alpha1.PurgeMode {
	if f != nil && f.Cluster != nil && f.Cluster.PurgeMode != "" {
		return f.Cluster.PurgeMode
	}
	return policyv1alpha1.PurgeModeGracefully
}

// FailbackOf is the binding's failover.cluster.failback, off by default.
func FailbackOf(f *policyv1alpha1.FailoverBehavior) bool {
	return f != nil && f.Cluster != nil && ptr.Deref(f.Cluster.Failback, false)
}

// Cause is why a binding leaves a member, and how its copy there goes.
type Cause struct {
	Reason, Message, Producer string
	PurgeMode                 policyv1alpha1.PurgeMode
	// Grace is the task's gracePeriodSeconds.
	Grace time.Duration
	// PreservedLabelState goes onto the replacement copies (application
	// failover's statePreservation).
	PreservedLabelState map[string]string
}

// TaintCause is the cause of an eviction by a NoExecute taint: the purge
// mode of failover.cluster, grace the --graceful-eviction-timeout.
func TaintCause(spec *workv1alpha1.ResourceBindingSpec, due Due, grace time.Duration) Cause {
	return Cause{
		Reason: workv1alpha1.EvictionReasonTaintUntolerated, Message: messageOf(due), Producer: workv1alpha1.EvictionProducerTaintManager,
		PurgeMode: PurgeModeOf(spec.Failover), Grace: grace,
	}
}

// Evict records a graceful eviction task for member, one of spec.clusters:
// the cause's purge mode (Never sets suppressDeletion), grace as
// gracePeriodSeconds, the placement before the eviction (without members
// already leaving). The member stays in spec.clusters: the scheduler, the
// only writer of spec.clusters, takes it out when it next decides
// (scheduler.Staying) and places its replicas elsewhere. It reports false,
// changing nothing, when member is not in spec.clusters. A task already
// held for member is replaced.
func Evict(spec *workv1alpha1.ResourceBindingSpec, member string, cause Cause, now time.Time) bool {
	i := slices.IndexFunc(spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == member })
	if i < 0 {
		return false
	}
	before := make([]string, 0, len(spec.Clusters))
	for _, c := range spec.Clusters {
		if c.Name == member || !Evicting(spec, c.Name) {
			before = append(before, c.Name)
		}
	}
	task := workv1alpha1.GracefulEvictionTask{
		FromCluster:            member,
		PurgeMode:              cause.PurgeMode,
		Replicas:               ptr.To(spec.Clusters[i].Replicas),
		Reason:                 cause.Reason,
		Message:                cause.Message,
		Producer:               cause.Producer,
		GracePeriodSeconds:     ptr.To(int32(cause.Grace / time.Second)),
		PreservedLabelState:    cause.PreservedLabelState,
		CreationTimestamp:      ptr.To(metav1.NewTime(now)),
		ClustersBeforeFailover: before,
	}
	if cause.PurgeMode == policyv1alpha1.Never {
		task.SuppressDeletion = ptr.To(true)
	}
	spec.GracefulEvictionTasks = slices.DeleteFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == member })
	spec.GracefulEvictionTasks = append(spec.GracefulEvictionTasks, task)
	return true
}

// Evicting says whether a graceful eviction task is held for member.
func Evicting(spec *workv1alpha1.ResourceBindingSpec, member string) bool {
	return slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == member })
}

// AwaitingScheduler says whether member is evicted (a task is held for it)
// but still in spec.clusters because the scheduler has not decided since:
// its copy is not the placement, nor is it placed there again. Once the
// scheduler has observed the binding's generation, a member with a task
// still in spec.clusters is one it placed there again.
func AwaitingScheduler(b Binding, member string) bool {
	return b.Status.SchedulerObservedGeneration < b.Generation && Evicting(b.Spec, member) &&
		slices.ContainsFunc(b.Spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == member })
}

func messageOf(due Due) string {
	if due.Tolerated {
		return fmt.Sprintf("taint %s: tolerationSeconds passed", due.Taint.ToString())
	}
	return fmt.Sprintf("taint %s is not tolerated", due.Taint.ToString())
}

// PurgingDirectly says whether a task of purge mode Directly is still held:
// the scheduler does not place the binding until the evicted copy is gone
// and the purge phase (controllers/binding) has purged the task.
func PurgingDirectly(spec *workv1alpha1.ResourceBindingSpec) bool {
	return slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool {
		return t.PurgeMode == policyv1alpha1.PurgeModeDirectly
	})
}
