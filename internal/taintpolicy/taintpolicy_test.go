package taintpolicy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func cond(typ string, status metav1.ConditionStatus, since time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(since)}
}

func match(typ string, op policyv1alpha1.MatchConditionOperator, forSeconds int32, values ...metav1.ConditionStatus) policyv1alpha1.MatchCondition {
	m := policyv1alpha1.MatchCondition{ConditionType: typ, Operator: op, StatusValues: values}
	if forSeconds > 0 {
		m.ForSeconds = &forSeconds
	}
	return m
}

const (
	In    = policyv1alpha1.MatchConditionOpIn
	NotIn = policyv1alpha1.MatchConditionOpNotIn
	T     = metav1.ConditionTrue
	F     = metav1.ConditionFalse
	U     = metav1.ConditionUnknown
)

func TestEvaluateConditionsAndForSeconds(t *testing.T) {
	now := t0.Add(time.Minute)
	unreachableSince := func(d time.Duration) Conditions {
		return Conditions{Member: []metav1.Condition{cond("Reachable", F, now.Add(-d))}}
	}
	tests := []struct {
		name      string
		add, rm   []policyv1alpha1.MatchCondition
		conds     Conditions
		want      Verdict
		recheckAt time.Time
	}{
		{"In matches the status at once", []policyv1alpha1.MatchCondition{match("Reachable", In, 0, F)}, nil,
			unreachableSince(0), Add, time.Time{}},
		{"forSeconds not yet passed: keep, recheck when it has", []policyv1alpha1.MatchCondition{match("Reachable", In, 300, F)}, nil,
			unreachableSince(100 * time.Second), Keep, now.Add(200 * time.Second)},
		{"forSeconds passed exactly: add", []policyv1alpha1.MatchCondition{match("Reachable", In, 300, F)}, nil,
			unreachableSince(300 * time.Second), Add, time.Time{}},
		{"NotIn True matches False", []policyv1alpha1.MatchCondition{match("Reachable", NotIn, 0, T)}, nil,
			unreachableSince(0), Add, time.Time{}},
		{"NotIn False does not match False", []policyv1alpha1.MatchCondition{match("Reachable", NotIn, 0, F, U)}, nil,
			unreachableSince(0), Keep, time.Time{}},
		{"a condition the member does not report matches neither In nor NotIn",
			[]policyv1alpha1.MatchCondition{match("Missing", NotIn, 0, T)}, []policyv1alpha1.MatchCondition{match("Missing", In, 0, T)},
			unreachableSince(0), Keep, time.Time{}},
		{"every condition must match", []policyv1alpha1.MatchCondition{match("Reachable", In, 0, F), match("Ready", In, 0, T)}, nil,
			Conditions{Member: []metav1.Condition{cond("Reachable", F, now), cond("Ready", F, now)}}, Keep, time.Time{}},
		{"the latest forSeconds decides when a list matches",
			[]policyv1alpha1.MatchCondition{match("Reachable", In, 60, F), match("Ready", In, 120, F)}, nil,
			Conditions{Member: []metav1.Condition{cond("Reachable", F, now.Add(-90*time.Second)), cond("Ready", F, now.Add(-90*time.Second))}},
			Keep, now.Add(30 * time.Second)},
		{"removeOnConditions match: remove",
			[]policyv1alpha1.MatchCondition{match("Reachable", In, 0, F)}, []policyv1alpha1.MatchCondition{match("Reachable", In, 0, T)},
			Conditions{Member: []metav1.Condition{cond("Reachable", T, now)}}, Remove, time.Time{}},
		{"remove with forSeconds pending: keep until it passes",
			nil, []policyv1alpha1.MatchCondition{match("Reachable", In, 30, T)},
			Conditions{Member: []metav1.Condition{cond("Reachable", T, now.Add(-10*time.Second))}}, Keep, now.Add(20 * time.Second)},
		{"capi: names a condition of the CAPI Cluster", []policyv1alpha1.MatchCondition{match("capi:RemoteConnectionProbe", In, 0, F)}, nil,
			Conditions{CAPI: []metav1.Condition{cond("RemoteConnectionProbe", F, now)}}, Add, time.Time{}},
		{"capi: does not read the member's conditions", []policyv1alpha1.MatchCondition{match("capi:Reachable", In, 0, F)}, nil,
			unreachableSince(0), Keep, time.Time{}},
		{"an empty list never matches", nil, nil, unreachableSince(0), Keep, time.Time{}},
		{"when both lists match, add wins", []policyv1alpha1.MatchCondition{match("Reachable", In, 0, F)}, []policyv1alpha1.MatchCondition{match("Reachable", NotIn, 0, T)},
			unreachableSince(0), Add, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &policyv1alpha1.ClusterTaintPolicySpec{AddOnConditions: tt.add, RemoveOnConditions: tt.rm}
			got, at := Evaluate(spec, tt.conds, now)
			if got != tt.want || !at.Equal(tt.recheckAt) {
				t.Errorf("Evaluate = %s, recheck %v; want %s, recheck %v", got, at, tt.want, tt.recheckAt)
			}
		})
	}
}

func member(taints []corev1.Taint, managed string, conds ...metav1.Condition) *clusterv1alpha1.MemberCluster {
	m := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"tier": "gold"}}}
	m.Spec.Taints = taints
	m.Status.Conditions = conds
	if managed != "" {
		m.Annotations = map[string]string{clusterv1alpha1.PolicyTaintsAnnotation: managed}
	}
	return m
}

func taint(key string, effect corev1.TaintEffect, added time.Time) corev1.Taint {
	t := corev1.Taint{Key: key, Effect: effect}
	if !added.IsZero() {
		at := metav1.NewTime(added)
		t.TimeAdded = &at
	}
	return t
}

// render is "key:Effect@minutes-after-t0" per taint, in order.
func render(ts []corev1.Taint) string {
	var parts []string
	for _, t := range ts {
		s := t.Key + ":" + string(t.Effect)
		if t.Value != "" {
			s = t.Key + "=" + t.Value + ":" + string(t.Effect)
		}
		if t.TimeAdded != nil {
			s += "@" + t.TimeAdded.Sub(t0).String()
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestDefaultsTaintAnUnreachableMemberInTwoStepsAndUntaintItOnRecovery(t *testing.T) {
	grace := 5 * time.Minute
	defaults := Defaults(grace)
	m := member(nil, "", cond("Reachable", F, t0), cond("ControlPlaneAvailable", T, t0), cond("WorkersAvailable", T, t0))

	steps := []struct {
		name      string
		at        time.Time
		reachable metav1.Condition
		taints    string
		managed   string
		recheckAt time.Time
	}{
		{"unreachable: NoSchedule at once, NoExecute later", t0, cond("Reachable", F, t0),
			"cluster.flotilla.io/unreachable:NoSchedule@0s", "cluster.flotilla.io/unreachable:NoSchedule", t0.Add(grace)},
		{"within the grace period: nothing more", t0.Add(4 * time.Minute), cond("Reachable", F, t0),
			"cluster.flotilla.io/unreachable:NoSchedule@0s", "cluster.flotilla.io/unreachable:NoSchedule", t0.Add(grace)},
		{"after the grace period: NoExecute", t0.Add(grace), cond("Reachable", F, t0),
			"cluster.flotilla.io/unreachable:NoSchedule@0s cluster.flotilla.io/unreachable:NoExecute@5m0s",
			"cluster.flotilla.io/unreachable:NoExecute,cluster.flotilla.io/unreachable:NoSchedule", time.Time{}},
		{"paused: Unknown keeps the taints as they are", t0.Add(6 * time.Minute), cond("Reachable", U, t0.Add(6*time.Minute)),
			"cluster.flotilla.io/unreachable:NoSchedule@0s cluster.flotilla.io/unreachable:NoExecute@5m0s",
			"cluster.flotilla.io/unreachable:NoExecute,cluster.flotilla.io/unreachable:NoSchedule", time.Time{}},
		{"reachable again: both go", t0.Add(7 * time.Minute), cond("Reachable", T, t0.Add(7*time.Minute)), "", "", time.Time{}},
	}
	for _, s := range steps {
		m.Status.Conditions[0] = s.reachable
		plan := Compute(Input{Member: m, Policies: defaults, Now: s.at})
		if got := render(plan.Taints); got != s.taints || plan.Managed != s.managed || !plan.RecheckAt.Equal(s.recheckAt) {
			t.Fatalf("%s: taints %q managed %q recheck %v; want %q, %q, %v", s.name, got, plan.Managed, plan.RecheckAt, s.taints, s.managed, s.recheckAt)
		}
		m.Spec.Taints = plan.Taints
		m.Annotations = map[string]string{clusterv1alpha1.PolicyTaintsAnnotation: plan.Managed}
	}
}

func TestComputeTouchesOnlyTheTaintsPoliciesAdded(t *testing.T) {
	now := t0.Add(time.Hour)
	unreachable := Defaults(time.Minute)[:2]
	userNoExec := taint(clusterv1alpha1.TaintUnreachable, corev1.TaintEffectNoExecute, t0) // set by a user, same key and effect
	tests := []struct {
		name            string
		m               *clusterv1alpha1.MemberCluster
		policies        []policyv1alpha1.ClusterTaintPolicy
		taints, managed string
		added, removed  int
	}{{
		name:     "a user's taint of the same key and effect is neither taken over nor removed",
		m:        member([]corev1.Taint{userNoExec}, "", cond("Reachable", F, t0)),
		policies: unreachable,
		taints:   "cluster.flotilla.io/unreachable:NoExecute@0s cluster.flotilla.io/unreachable:NoSchedule@1h0m0s",
		managed:  "cluster.flotilla.io/unreachable:NoSchedule", added: 1,
	}, {
		name:     "recovery removes only the policy's taint",
		m:        member([]corev1.Taint{userNoExec, taint(clusterv1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule, t0)}, "cluster.flotilla.io/unreachable:NoSchedule", cond("Reachable", T, t0)),
		policies: unreachable,
		taints:   "cluster.flotilla.io/unreachable:NoExecute@0s", managed: "", removed: 1,
	}, {
		name:     "enrolment's terminating taint is left alone",
		m:        member([]corev1.Taint{taint(clusterv1alpha1.TaintTerminating, corev1.TaintEffectNoExecute, t0)}, "", cond("Reachable", T, t0)),
		policies: unreachable,
		taints:   "cluster.flotilla.io/terminating:NoExecute@0s", managed: "",
	}, {
		name:     "a policy's taint whose policy is gone is removed",
		m:        member([]corev1.Taint{taint(clusterv1alpha1.TaintDegraded, corev1.TaintEffectNoSchedule, t0)}, "cluster.flotilla.io/workers-degraded:NoSchedule", cond("Reachable", T, t0)),
		policies: unreachable,
		taints:   "", managed: "", removed: 1,
	}, {
		name:     "a policy's taint removed by hand is forgotten",
		m:        member(nil, "cluster.flotilla.io/unreachable:NoSchedule", cond("Reachable", U, t0)),
		policies: unreachable,
		taints:   "", managed: "",
	}, {
		name: "a policy that does not target the member does nothing",
		m:    member(nil, "", cond("Reachable", F, t0)),
		policies: func() []policyv1alpha1.ClusterTaintPolicy {
			p := unreachable[0].DeepCopy()
			p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"other"}}
			return []policyv1alpha1.ClusterTaintPolicy{*p}
		}(),
		taints: "", managed: "",
	}, {
		name: "targeting by label",
		m:    member(nil, "", cond("Reachable", F, t0)),
		policies: func() []policyv1alpha1.ClusterTaintPolicy {
			p := unreachable[0].DeepCopy()
			p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}
			return []policyv1alpha1.ClusterTaintPolicy{*p}
		}(),
		taints: "cluster.flotilla.io/unreachable:NoSchedule@1h0m0s", managed: "cluster.flotilla.io/unreachable:NoSchedule", added: 1,
	}, {
		name: "one policy adding beats another removing the same taint",
		m:    member(nil, "", cond("Reachable", F, t0), cond("Ready", T, t0)),
		policies: []policyv1alpha1.ClusterTaintPolicy{
			{ObjectMeta: metav1.ObjectMeta{Name: "a-remove"}, Spec: policyv1alpha1.ClusterTaintPolicySpec{
				RemoveOnConditions: []policyv1alpha1.MatchCondition{match("Ready", In, 0, T)},
				Taints:             []policyv1alpha1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b-add"}, Spec: policyv1alpha1.ClusterTaintPolicySpec{
				AddOnConditions: []policyv1alpha1.MatchCondition{match("Reachable", In, 0, F)},
				Taints:          []policyv1alpha1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}}},
		},
		taints: "k=v:NoSchedule@1h0m0s", managed: "k:NoSchedule", added: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := Compute(Input{Member: tt.m, Policies: tt.policies, Now: now})
			if got := render(plan.Taints); got != tt.taints || plan.Managed != tt.managed || len(plan.Added) != tt.added || len(plan.Removed) != tt.removed {
				t.Errorf("taints %q managed %q added %d removed %d; want %q, %q, %d, %d", got, plan.Managed, len(plan.Added), len(plan.Removed), tt.taints, tt.managed, tt.added, tt.removed)
			}
		})
	}
}

func TestAnInvalidTargetIsReportedAndSkipped(t *testing.T) {
	p := Defaults(time.Minute)[0]
	p.Spec.TargetClusters = &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: []policyv1alpha1.FieldSelectorRequirement{{Key: "region", Operator: corev1.NodeSelectorOpIn}}}}
	plan := Compute(Input{Member: member(nil, "", cond("Reachable", F, t0)), Policies: []policyv1alpha1.ClusterTaintPolicy{p}, Now: t0})
	if len(plan.Taints) != 0 || len(plan.Errors) != 1 || !strings.Contains(plan.Errors[0], "flotilla-unreachable-noschedule") {
		t.Errorf("taints %v errors %v; want none and one error naming the policy", plan.Taints, plan.Errors)
	}
}
