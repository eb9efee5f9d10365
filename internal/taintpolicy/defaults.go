package taintpolicy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Names of the default policies.
const (
	DefaultUnreachableNoSchedule = "flotilla-unreachable-noschedule"
	DefaultUnreachableNoExecute  = "flotilla-unreachable-noexecute"
	DefaultNotReadyNoSchedule    = "flotilla-not-ready-noschedule"
	DefaultNotReadyNoExecute     = "flotilla-not-ready-noexecute"
	DefaultWorkersDegraded       = "flotilla-workers-degraded"
)

// Defaults is the default policy set, the health → taint table of
// docs/failover.md with grace as the NoExecute wait:
//
//	Reachable=False              → unreachable:NoSchedule at once, unreachable:NoExecute after grace
//	ControlPlaneAvailable=False  → not-ready:NoSchedule at once, not-ready:NoExecute after grace
//	WorkersAvailable=False       → workers-degraded:NoSchedule
//
// each removed once its condition is True again. The Terminating taint of a
// deleted Cluster is enrolment's, not a policy's.
func Defaults(grace time.Duration) []policyv1alpha1.ClusterTaintPolicy {
	seconds := int32(grace / time.Second)
	return []policyv1alpha1.ClusterTaintPolicy{
		policy(DefaultUnreachableNoSchedule, clusterv1alpha1.ConditionReachable, 0, clusterv1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule),
		policy(DefaultUnreachableNoExecute, clusterv1alpha1.ConditionReachable, seconds, clusterv1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute),
		policy(DefaultNotReadyNoSchedule, clusterv1alpha1.ConditionControlPlaneAvailable, 0, clusterv1alpha1.TaintNotReady, corev1.TaintEffectNoSchedule),
		policy(DefaultNotReadyNoExecute, clusterv1alpha1.ConditionControlPlaneAvailable, seconds, clusterv1alpha1.TaintNotReady, corev1.TaintEffectNoExecute),
		policy(DefaultWorkersDegraded, clusterv1alpha1.ConditionWorkersAvailable, 0, clusterv1alpha1.TaintDegraded, corev1.TaintEffectNoSchedule),
	}
}

func policy(name, condition string, forSeconds int32, key string, effect corev1.TaintEffect) policyv1alpha1.ClusterTaintPolicy {
	add := policyv1alpha1.MatchCondition{ConditionType: condition, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionFalse}}
	if forSeconds > 0 {
		add.ForSeconds = &forSeconds
	}
	return policyv1alpha1.ClusterTaintPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1alpha1.DefaultTaintPolicyLabel: "true"}},
		Spec: policyv1alpha1.ClusterTaintPolicySpec{
			AddOnConditions:    []policyv1alpha1.MatchCondition{add},
			RemoveOnConditions: []policyv1alpha1.MatchCondition{{ConditionType: condition, Operator: policyv1alpha1.MatchConditionOpIn, StatusValues: []metav1.ConditionStatus{metav1.ConditionTrue}}},
			Taints:             []policyv1alpha1.Taint{{Key: key, Effect: effect}},
		},
	}
}
