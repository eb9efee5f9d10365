package plugins

import "github.com/flotilla-io/flotilla/internal/scheduler/framework"

// MemberDeleting drops members being deleted: their workloads are draining.
type MemberDeleting struct{}

func (MemberDeleting) Name() string { return "MemberDeleting" }

func (MemberDeleting) Filter(_ *framework.Cycle, m *framework.Member) framework.Status {
	if m.Deleting {
		return framework.Reject("member is being deleted")
	}
	return framework.Status{}
}

// GracefulEviction drops members the binding is being evicted from, so that
// the replacement does not land where the old copy is leaving.
type GracefulEviction struct{}

func (GracefulEviction) Name() string { return "GracefulEviction" }

func (GracefulEviction) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if c.Evicted(m.Name) {
		return framework.Reject("binding is being evicted from this member")
	}
	return framework.Status{}
}

// MemberReady drops members whose Ready condition is not True; a member the
// binding already runs on keeps its replicas there (framework.Held).
type MemberReady struct{}

func (MemberReady) Name() string { return "MemberReady" }

func (MemberReady) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if m.NotReadyReason != "" {
		return framework.RejectOrHold(c, m, m.NotReadyReason)
	}
	return framework.Status{}
}

// Cordon drops members marked spec.unschedulable; a member the binding
// already runs on keeps its replicas there (framework.Held).
type Cordon struct{}

func (Cordon) Name() string { return "Cordon" }

func (Cordon) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if m.Unschedulable {
		return framework.RejectOrHold(c, m, "member is cordoned (spec.unschedulable)")
	}
	return framework.Status{}
}
