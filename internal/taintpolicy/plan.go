package taintpolicy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
)

// Input is one member and every policy.
type Input struct {
	Member *clusterv1alpha1.MemberCluster
	// CAPI are the conditions of the member's CAPI Cluster; nil without one.
	CAPI     []metav1.Condition
	Policies []policyv1alpha1.ClusterTaintPolicy
	Now      time.Time
}

// Change is one taint added or removed, and the policy that asked.
type Change struct {
	Taint  corev1.Taint
	Policy string
}

// Plan is what the member's taints become.
type Plan struct {
	// Taints is the member's new spec.taints; Managed its new
	// PolicyTaintsAnnotation value (empty: remove the annotation).
	Taints  []corev1.Taint
	Managed string
	// Added and Removed are the changes, for events.
	Added, Removed []Change
	// RecheckAt is when a forSeconds wait runs out; zero when none does.
	RecheckAt time.Time
	// Errors name policies whose targetClusters cannot be evaluated.
	Errors []string
}

// Changed says whether the plan changes the member.
func (p *Plan) Changed() bool { return len(p.Added) > 0 || len(p.Removed) > 0 }

// taintID is a taint's identity on a member: key and effect.
type taintID struct {
	key    string
	effect corev1.TaintEffect
}

func (id taintID) String() string { return id.key + ":" + string(id.effect) }

func idOf(t corev1.Taint) taintID { return taintID{t.Key, t.Effect} }

// want is the merged verdict on one taint.
type want struct {
	verdict Verdict
	taint   corev1.Taint
	policy  string
}

// Compute evaluates every policy against the member and merges the verdicts
// (see the package documentation).
func Compute(in Input) Plan {
	var plan Plan
	conds := Conditions{Member: in.Member.Status.Conditions, CAPI: in.CAPI}
	policies := slices.Clone(in.Policies)
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })

	wants := map[taintID]*want{}
	for i := range policies {
		p := &policies[i]
		if p.Spec.TargetClusters != nil {
			ok, err := clusteraffinity.Matches(p.Spec.TargetClusters, in.Member)
			if err != nil {
				plan.Errors = append(plan.Errors, fmt.Sprintf("ClusterTaintPolicy %s: targetClusters: %v", p.Name, err))
				continue
			}
			if !ok {
				continue
			}
		}
		verdict, at := Evaluate(&p.Spec, conds, in.Now)
		plan.RecheckAt = earliest(plan.RecheckAt, at)
		for _, t := range p.Spec.Taints {
			id := taintID{t.Key, t.Effect}
			w := wants[id]
			if w == nil {
				w = &want{verdict: Keep}
				wants[id] = w
			}
			// Add beats Remove beats Keep; the first policy by name asking
			// for a verdict gives the taint's value.
			if verdict > Keep && (w.verdict == Keep || verdict == Add && w.verdict == Remove) {
				w.verdict, w.policy = verdict, p.Name
				w.taint = corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
			}
		}
	}

	managed := ParseManaged(in.Member.Annotations[clusterv1alpha1.PolicyTaintsAnnotation])
	present := map[taintID]bool{}
	for _, t := range in.Member.Spec.Taints {
		present[idOf(t)] = true
	}
	now := metav1.NewTime(in.Now)
	for _, t := range in.Member.Spec.Taints {
		id := idOf(t)
		w, listed := wants[id]
		switch {
		case !managed[id]:
			plan.Taints = append(plan.Taints, t) // not a policy's: never touched
		case !listed:
			plan.Removed = append(plan.Removed, Change{Taint: t, Policy: ""})
			delete(managed, id)
		case w.verdict == Remove:
			plan.Removed = append(plan.Removed, Change{Taint: t, Policy: w.policy})
			delete(managed, id)
		case w.verdict == Add && t.Value != w.taint.Value:
			t.Value = w.taint.Value
			plan.Taints = append(plan.Taints, t)
		default:
			plan.Taints = append(plan.Taints, t)
		}
	}
	ids := make([]taintID, 0, len(wants))
	for id := range wants {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		w := wants[id]
		if w.verdict != Add || present[id] {
			continue
		}
		t := w.taint
		t.TimeAdded = now.DeepCopy()
		plan.Taints = append(plan.Taints, t)
		plan.Added = append(plan.Added, Change{Taint: t, Policy: w.policy})
		managed[id] = true
	}
	for id := range managed {
		if !present[id] && !isAdded(plan.Added, id) {
			delete(managed, id) // removed by hand: no longer ours
		}
	}
	plan.Managed = FormatManaged(managed)
	return plan
}

func isAdded(added []Change, id taintID) bool {
	for _, c := range added {
		if idOf(c.Taint) == id {
			return true
		}
	}
	return false
}

// ParseManaged reads a PolicyTaintsAnnotation value.
func ParseManaged(v string) map[taintID]bool {
	out := map[taintID]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			continue
		}
		out[taintID{item[:i], corev1.TaintEffect(item[i+1:])}] = true
	}
	return out
}

// FormatManaged writes a PolicyTaintsAnnotation value, sorted.
func FormatManaged(ids map[taintID]bool) string {
	out := make([]string, 0, len(ids))
	for id, ok := range ids {
		if ok {
			out = append(out, id.String())
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
