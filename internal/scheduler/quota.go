package scheduler

import (
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

// NoQuota admits everything.
type NoQuota struct{}

func (NoQuota) CheckQuota(string, *workv1alpha1.ReplicaRequirements, int64) error { return nil }
