package eviction

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Binding is what a task's purge is judged by.
type Binding struct {
	Generation int64
	Spec       *workv1alpha1.ResourceBindingSpec
	Status     *workv1alpha1.ResourceBindingStatus
}

// Purge is what to do with one graceful eviction task.
type Purge struct {
	// Remove: drop the task, so that the evicted member's Work goes.
	Remove bool
	// DeleteWork (Directly): delete the evicted member's Work now, before
	// the replacement is placed; the task stays until it is gone.
	DeleteWork bool
	// Why says what was decided, for events and logs.
	Why string
	// RecheckAt is when the grace period runs out; zero when the task stays
	// for good or goes now.
	RecheckAt time.Time
}

// PurgeOf decides one task, given the binding and whether the evicted
// member's Work of it is gone:
//   - suppressDeletion true, or purge mode Never without suppressDeletion
//     false: the task stays for an operator (who sets suppressDeletion false
//     to release it);
//   - Directly: the old Work is deleted first; the task goes once the Work is
//     gone (the scheduler places the replacement only then), or when the grace
//     period passes (an unreachable member cannot confirm the deletion);
//   - Gracefully (the default): the task goes once the replacement is healthy
//     (Replacement), or once the grace period passes if a copy is healthy on
//     some other member by then: the last running copy is never removed
//     while its replacement runs nowhere (e.g. placed on no member, or every
//     other member down), however long that takes.
//
// The grace period is the task's gracePeriodSeconds, else defaultGrace, from
// its creationTimestamp (a task without one has none left).
func PurgeOf(task *workv1alpha1.GracefulEvictionTask, b Binding, workGone bool, defaultGrace time.Duration, now time.Time) Purge {
	mode := task.PurgeMode
	if s := task.SuppressDeletion; (s != nil && *s) || (s == nil && mode == policyv1alpha1.Never) {
		return Purge{Why: "suppressDeletion: the copy is kept until an operator sets suppressDeletion to false"}
	}
	if mode == policyv1alpha1.Never {
		return Purge{Remove: true, Why: "released by an operator (suppressDeletion false)"}
	}
	if AwaitingScheduler(b, task.FromCluster) {
		// Its copy is still the placement until the scheduler takes it
		// out; the scheduler's write brings the binding back.
		return Purge{Why: "waiting for the scheduler to take the binding off " + task.FromCluster}
	}
	if slices.ContainsFunc(b.Spec.Clusters, func(c workv1alpha1.TargetCluster) bool { return c.Name == task.FromCluster }) {
		// The scheduler placed it there again (the member recovered and no
		// other could take it): its copy there is the placement now.
		return Purge{Remove: true, Why: "placed on " + task.FromCluster + " again"}
	}
	grace := defaultGrace
	if task.GracePeriodSeconds != nil {
		grace = time.Duration(*task.GracePeriodSeconds) * time.Second
	}
	expiry := now
	if task.CreationTimestamp != nil {
		expiry = task.CreationTimestamp.Add(grace)
	}
	expired := !now.Before(expiry)

	if mode == policyv1alpha1.PurgeModeDirectly {
		switch {
		case workGone:
			return Purge{Remove: true, Why: "purge mode Directly: the copy on " + task.FromCluster + " is removed"}
		case expired:
			return Purge{Remove: true, Why: fmt.Sprintf("purge mode Directly: the copy on %s was not confirmed removed within %s", task.FromCluster, grace)}
		}
		return Purge{DeleteWork: true, Why: "purge mode Directly: removing the copy on " + task.FromCluster + " first", RecheckAt: expiry}
	}
	ok, why := Replacement(b)
	switch {
	case ok:
		return Purge{Remove: true, Why: "the replacement is healthy: " + why}
	case expired:
		if elsewhere, running := RunningElsewhere(b, task.FromCluster); running {
			return Purge{Remove: true, Why: fmt.Sprintf("grace period of %s passed (%s); a copy is healthy on %s", grace, why, elsewhere)}
		}
		// Nothing to recheck at: a change of the binding's status brings it back.
		return Purge{Why: fmt.Sprintf("grace period of %s passed, but the copy on %s is the last one running (%s): it stays until a replacement is healthy", grace, task.FromCluster, why)}
	}
	return Purge{Why: "waiting for the replacement: " + why, RecheckAt: expiry}
}

// RunningElsewhere names a member of the placement other than from where
// the binding's object is applied and Healthy.
func RunningElsewhere(b Binding, from string) (string, bool) {
	placed := map[string]bool{}
	for _, c := range b.Spec.Clusters {
		placed[c.Name] = c.Name != from
	}
	for _, it := range b.Status.AggregatedStatus {
		if placed[it.ClusterName] && it.Applied && it.Health == workv1alpha1.ResourceHealthy {
			return it.ClusterName, true
		}
	}
	return "", false
}

// Replacement says whether the binding's placement without the evicted
// members is healthy: scheduled for the binding's current generation, every
// Work applied and its object Healthy, and, for a workload with replicas,
// as many Ready replicas as it wants.
func Replacement(b Binding) (bool, string) {
	spec, status := b.Spec, b.Status
	if status.SchedulerObservedGeneration < b.Generation {
		return false, "not yet rescheduled"
	}
	if len(spec.Clusters) == 0 {
		return false, "placed on no member"
	}
	applied := findCondition(status.Conditions, workv1alpha1.ConditionFullyApplied)
	if applied == nil || applied.Status != metav1.ConditionTrue || applied.ObservedGeneration < b.Generation {
		return false, "not yet applied on every member"
	}
	items := map[string]workv1alpha1.AggregatedStatusItem{}
	for _, it := range status.AggregatedStatus {
		items[it.ClusterName] = it
	}
	var names []string
	for _, c := range spec.Clusters {
		it, ok := items[c.Name]
		if !ok || !it.Applied || it.Health != workv1alpha1.ResourceHealthy {
			return false, "not yet healthy on " + c.Name
		}
		names = append(names, c.Name)
	}
	if spec.Replicas > 0 && status.ReadyReplicas < spec.Replicas {
		return false, fmt.Sprintf("%d of %d replicas Ready", status.ReadyReplicas, spec.Replicas)
	}
	return true, "healthy on " + strings.Join(names, ", ")
}

func findCondition(list []metav1.Condition, t string) *metav1.Condition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}
