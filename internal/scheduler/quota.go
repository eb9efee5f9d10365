package scheduler

import (
	"sync"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// QuotaChecker is the extension point through which FederatedResourceQuota
// takes part in scheduling: once a placement is computed, and before it is
// committed, the scheduler asks whether the namespace may take deltaReplicas
// more replicas of req (negative when the placement shrinks; for Duplicated
// every member's copy counts). A non-nil error refuses the placement with
// reason QuotaExceeded and its message.
//
// CheckQuota must not change state: Preview calls it too. A checker that
// reserves quota must do so when the binding is written, not here.
type QuotaChecker interface {
	CheckQuota(namespace string, req *workv1alpha1.ReplicaRequirements, deltaReplicas int64) error
}

// Placement is one decision's claim on quota, for a BindingQuota: the
// binding, what one replica needs, and its placement before and after.
type Placement struct {
	// Key and Namespace are the Input's.
	Key, Namespace string
	// APIVersion and Kind of the template (object-count quota keys).
	APIVersion, Kind string
	Requirements     *workv1alpha1.ReplicaRequirements
	// Clusters is the placement decided; Current the one in force before.
	Clusters, Current []workv1alpha1.TargetCluster
}

// BindingQuota is a QuotaChecker that keeps an account per binding. The
// scheduler asks it CheckPlacement instead of CheckQuota — the whole
// placement, so that a change of requirements is accounted as well as a
// change of replicas — and, once Schedule has committed a decision, calls
// Placed under the same lock that serialises decisions: the next decision's
// check sees this one's usage, so two bindings racing for the last of a
// quota cannot both get it.
//
// CheckPlacement must not change state (Preview calls it too).
type BindingQuota interface {
	QuotaChecker
	CheckPlacement(p Placement) error
	Placed(p Placement)
}

// DecisionSerialiser is a BindingQuota that other writers of its accounts
// (the binding controller charging what a binding renders) serialise with
// the scheduler's decisions: Schedule holds DecisionLock around
// decide-and-commit instead of a lock of its own, so a check and the charge
// that follows it are never interleaved with another's.
type DecisionSerialiser interface {
	DecisionLock() sync.Locker
}

// NoQuota admits everything.
type NoQuota struct{}

func (NoQuota) CheckQuota(string, *workv1alpha1.ReplicaRequirements, int64) error { return nil }
