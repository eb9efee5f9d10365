// Package health maps what Cluster API reports about a member's Cluster (its
// v1beta2 conditions and its Machines' conditions) and, for a Pull-mode
// member, its agent's Lease, to the member's Reachable, ControlPlaneAvailable,
// WorkersAvailable and Ready conditions. It is pure: controllers/health feeds
// it what it read and writes what it returns.
//
//   - Reachable mirrors RemoteConnectionProbe (Push) or the agent's Lease
//     (Pull: False once renewTime + leaseDurationSeconds has passed).
//   - ControlPlaneAvailable mirrors the Cluster's ControlPlaneAvailable.
//   - WorkersAvailable is False when fewer than the threshold share of worker
//     Machines is healthy (NodeHealthy True, and neither Ready nor
//     HealthCheckSucceeded False); Unknown when the Machines whose health is
//     unknown decide it.
//   - Ready is True only when Reachable and ControlPlaneAvailable are True and
//     the member is enrolled; a False input wins over an Unknown one, and the
//     reason names the first input that failed, in the order reachability,
//     control plane, enrolment. Workers do not make a member not Ready: a
//     degraded member gets its own NoSchedule taint.
//
// What is not a failure: while the Cluster is paused (spec.paused or the
// paused annotation) every input that would be False is reported Unknown with
// reason ClusterPaused; while it rolls out (RollingOut=True) and its API
// answers, an unavailable control plane or workers are reported Unknown with
// reason RollingOut. Unknown matches neither the add nor the remove
// conditions of the default taint policies, so taints neither appear nor
// escalate to NoExecute, and none is removed.
package health

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// CAPI condition types read from the Cluster and its Machines
// (sigs.k8s.io/cluster-api/api/core/v1beta2); repeated here so the package
// does not import Cluster API.
const (
	RemoteConnectionProbe = "RemoteConnectionProbe"
	ControlPlaneAvailable = "ControlPlaneAvailable"
	RollingOut            = "RollingOut"
	NodeHealthy           = "NodeHealthy"
	MachineReady          = "Ready"
	HealthCheckSucceeded  = "HealthCheckSucceeded"
)

// DefaultWorkersThreshold is the share of healthy worker Machines below which
// WorkersAvailable is False.
const DefaultWorkersThreshold = 0.5

// Input is what a member's health is computed from.
type Input struct {
	// RemoteConnectionProbe, ControlPlaneAvailable and RollingOut are the
	// CAPI Cluster's conditions of those types; nil when not reported.
	RemoteConnectionProbe *metav1.Condition
	ControlPlaneAvailable *metav1.Condition
	RollingOut            *metav1.Condition
	// Paused is true when the Cluster is paused (spec.paused or annotation).
	Paused bool
	// Enrolled is whether the member's Enrolled condition is True.
	Enrolled bool

	// Pull is true for a Pull-mode member: reachability comes from Lease.
	Pull bool
	// Lease is the agent's Lease; nil when it does not exist.
	Lease *Lease
	// Now is the time Lease expiry is judged at.
	Now time.Time

	// Machines are the Cluster's Machines.
	Machines []Machine
	// WorkersThreshold is the share (0..1] of healthy worker Machines
	// WorkersAvailable needs; DefaultWorkersThreshold when 0.
	WorkersThreshold float64
}

// Lease is the part of a coordination.k8s.io Lease health reads.
type Lease struct {
	// RenewTime is when the agent last renewed it.
	RenewTime time.Time
	// Duration is leaseDurationSeconds.
	Duration time.Duration
}

// Expiry is when the Lease runs out.
func (l Lease) Expiry() time.Time { return l.RenewTime.Add(l.Duration) }

// Machine is the part of a CAPI Machine health reads. A condition status is
// empty when the Machine does not report the condition.
type Machine struct {
	Name                 string
	ControlPlane         bool
	Deleting             bool
	NodeHealthy          metav1.ConditionStatus
	Ready                metav1.ConditionStatus
	HealthCheckSucceeded metav1.ConditionStatus
}

// Conditions returns the member's Reachable, ControlPlaneAvailable,
// WorkersAvailable and Ready conditions, in that order, without timestamps
// (the caller's condition setter keeps LastTransitionTime).
func Conditions(in Input) []metav1.Condition {
	var reachable metav1.Condition
	if in.Pull {
		reachable = leaseReachability(in.Lease, in.Now)
	} else {
		reachable = mirror(clusterv1alpha1.ConditionReachable, RemoteConnectionProbe, in.RemoteConnectionProbe,
			clusterv1alpha1.ReachableReason, clusterv1alpha1.UnreachableReason, clusterv1alpha1.ReachabilityUnknownReason)
	}
	cp := mirror(clusterv1alpha1.ConditionControlPlaneAvailable, ControlPlaneAvailable, in.ControlPlaneAvailable,
		clusterv1alpha1.ControlPlaneAvailableReason, clusterv1alpha1.ControlPlaneUnavailableReason, clusterv1alpha1.ControlPlaneUnknownReason)
	workers := workersAvailable(in.Machines, in.WorkersThreshold)

	switch {
	case in.Paused:
		for _, c := range []*metav1.Condition{&reachable, &cp, &workers} {
			notAFailure(c, clusterv1alpha1.ClusterPausedReason, "the Cluster is paused")
		}
	case in.RollingOut != nil && in.RollingOut.Status == metav1.ConditionTrue && reachable.Status == metav1.ConditionTrue:
		for _, c := range []*metav1.Condition{&cp, &workers} {
			notAFailure(c, clusterv1alpha1.RollingOutReason, "the Cluster is rolling out and its API answers")
		}
	}
	return []metav1.Condition{reachable, cp, workers, ready(reachable, cp, in.Enrolled)}
}

// RecheckAt is when the conditions change with time alone: a Pull member's
// Lease running out. Zero when nothing will.
func RecheckAt(in Input) time.Time {
	if !in.Pull || in.Lease == nil || !in.Now.Before(in.Lease.Expiry()) {
		return time.Time{}
	}
	return in.Lease.Expiry()
}

// notAFailure turns a False condition Unknown, with reason and the original
// status in the message.
func notAFailure(c *metav1.Condition, reason, why string) {
	if c.Status != metav1.ConditionFalse {
		return
	}
	c.Status, c.Reason = metav1.ConditionUnknown, reason
	c.Message = why + ", so this is not counted as a failure: " + c.Message
}

// leaseReachability judges a Pull member by its agent's Lease.
func leaseReachability(l *Lease, now time.Time) metav1.Condition {
	out := metav1.Condition{Type: clusterv1alpha1.ConditionReachable}
	switch {
	case l == nil:
		out.Status, out.Reason = metav1.ConditionUnknown, clusterv1alpha1.NoAgentLeaseReason
		out.Message = fmt.Sprintf("the agent has not created its Lease %s yet", clusterv1alpha1.AgentLeaseName)
	case !now.Before(l.Expiry()):
		out.Status, out.Reason = metav1.ConditionFalse, clusterv1alpha1.LeaseExpiredReason
		out.Message = fmt.Sprintf("the agent last renewed its Lease at %s; it expired at %s", stamp(l.RenewTime), stamp(l.Expiry()))
	default:
		out.Status, out.Reason = metav1.ConditionTrue, clusterv1alpha1.ReachableReason
		out.Message = fmt.Sprintf("the agent renewed its Lease at %s", stamp(l.RenewTime))
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// mirror copies one CAPI condition's status under Flotilla's type and
// reasons, keeping CAPI's reason and message in the message.
func mirror(flotillaType, capiType string, c *metav1.Condition, trueReason, falseReason, unknownReason string) metav1.Condition {
	out := metav1.Condition{Type: flotillaType}
	switch {
	case c == nil:
		out.Status, out.Reason = metav1.ConditionUnknown, unknownReason
		out.Message = fmt.Sprintf("Cluster API has not reported %s", capiType)
		return out
	case c.Status == metav1.ConditionTrue:
		out.Status, out.Reason = metav1.ConditionTrue, trueReason
	case c.Status == metav1.ConditionFalse:
		out.Status, out.Reason = metav1.ConditionFalse, falseReason
	default:
		out.Status, out.Reason = metav1.ConditionUnknown, unknownReason
	}
	out.Message = fmt.Sprintf("%s is %s", capiType, c.Status)
	if c.Reason != "" {
		out.Message += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		out.Message += ": " + c.Message
	}
	return out
}

// ready is True only when every input is True. A False input makes it False,
// otherwise an Unknown input makes it Unknown; the reason is that of the
// first failing input and the message lists all of them.
func ready(reachable, cp metav1.Condition, enrolled bool) metav1.Condition {
	out := metav1.Condition{Type: clusterv1alpha1.ConditionReady}
	var failed, unknown []metav1.Condition
	for _, c := range []metav1.Condition{reachable, cp} {
		switch c.Status {
		case metav1.ConditionFalse:
			failed = append(failed, c)
		case metav1.ConditionUnknown:
			unknown = append(unknown, c)
		}
	}
	if !enrolled {
		failed = append(failed, metav1.Condition{Reason: clusterv1alpha1.NotEnrolledReason, Message: "the member is not enrolled yet"})
	}
	switch {
	case len(failed) > 0:
		out.Status, out.Reason = metav1.ConditionFalse, failed[0].Reason
	case len(unknown) > 0:
		out.Status, out.Reason = metav1.ConditionUnknown, unknown[0].Reason
	default:
		out.Status, out.Reason = metav1.ConditionTrue, clusterv1alpha1.ReadyReason
		out.Message = "reachable, control plane available, enrolled"
		return out
	}
	msgs := make([]string, 0, len(failed)+len(unknown))
	for _, c := range append(failed, unknown...) {
		msgs = append(msgs, c.Message)
	}
	out.Message = strings.Join(msgs, "; ")
	return out
}
