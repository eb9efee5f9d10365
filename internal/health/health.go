// Package health maps a CAPI Cluster's v1beta2 conditions to a member's
// Reachable, ControlPlaneAvailable and Ready conditions. It is pure: the
// enrolment controller feeds it conditions and writes what it returns.
//
// The mapping is deliberately thin for now — Ready is True only when Cluster
// API's RemoteConnectionProbe and ControlPlaneAvailable are both True and the
// member is enrolled; a False input wins over an Unknown one, and the reason
// names the first input that failed, in the order probe, control plane,
// enrolment. Grace periods and taints are a later layer's job.
package health

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// CAPI condition types read from the Cluster (sigs.k8s.io/cluster-api/api/core/v1beta2);
// repeated here so the package does not import Cluster API.
const (
	RemoteConnectionProbe = "RemoteConnectionProbe"
	ControlPlaneAvailable = "ControlPlaneAvailable"
)

// Input is what a member's health is computed from.
type Input struct {
	// RemoteConnectionProbe and ControlPlaneAvailable are the CAPI Cluster's
	// conditions of those types; nil when Cluster API has not reported them.
	RemoteConnectionProbe *metav1.Condition
	ControlPlaneAvailable *metav1.Condition
	// Enrolled is whether the member's Enrolled condition is True.
	Enrolled bool
}

// Conditions returns the member's Reachable, ControlPlaneAvailable and Ready
// conditions, in that order, without timestamps (the caller's condition
// setter keeps LastTransitionTime).
func Conditions(in Input) []metav1.Condition {
	reachable := mirror(clusterv1alpha1.ConditionReachable, RemoteConnectionProbe, in.RemoteConnectionProbe,
		clusterv1alpha1.ReachableReason, clusterv1alpha1.UnreachableReason, clusterv1alpha1.ReachabilityUnknownReason)
	cp := mirror(clusterv1alpha1.ConditionControlPlaneAvailable, ControlPlaneAvailable, in.ControlPlaneAvailable,
		clusterv1alpha1.ControlPlaneAvailableReason, clusterv1alpha1.ControlPlaneUnavailableReason, clusterv1alpha1.ControlPlaneUnknownReason)
	return []metav1.Condition{reachable, cp, ready(reachable, cp, in.Enrolled)}
}

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
