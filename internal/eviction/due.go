// Package eviction decides, purely, when a binding must leave a member and
// what is left behind: NoExecute taints against the placement's
// clusterTolerations (tolerationSeconds counted from the taint's timeAdded),
// the graceful eviction task an eviction writes, and when a task may go
// (purge modes Directly, Gracefully, Never). controllers/binding (the evict and purge phases) acts on
// its answers.
package eviction

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/capacity"
)

// Due is when a binding must leave one member, and the taint that says so.
type Due struct {
	// At is when the eviction is due; a time not after now means at once.
	At time.Time
	// Taint is the NoExecute taint that evicts (the earliest due).
	Taint corev1.Taint
	// Tolerated is true when a toleration delays the eviction (tolerationSeconds).
	Tolerated bool
}

// DueOf says whether, and when, a binding with tolerations must leave a
// member with taints. Following Kubernetes' NoExecute semantics:
//   - a NoExecute taint no toleration matches evicts at once;
//   - a matching toleration without tolerationSeconds keeps the binding
//     there for good;
//   - otherwise the binding may stay the smallest matching tolerationSeconds
//     (0 or less: none) after the taint's timeAdded. A taint without
//     timeAdded counts as added long ago: its tolerationSeconds have passed.
//
// The earliest taint decides. NoSchedule and PreferNoSchedule taints never
// evict.
func DueOf(tolerations []corev1.Toleration, taints []corev1.Taint) (Due, bool) {
	var out Due
	found := false
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		at, tolerated, evicts := dueFor(tolerations, t)
		if !evicts {
			continue
		}
		if !found || at.Before(out.At) {
			out = Due{At: at, Taint: *t, Tolerated: tolerated}
			found = true
		}
	}
	return out, found
}

// dueFor is when one NoExecute taint evicts; evicts is false when a
// toleration without tolerationSeconds matches it.
func dueFor(tolerations []corev1.Toleration, t *corev1.Taint) (at time.Time, tolerated, evicts bool) {
	var seconds *int64
	matched := false
	for i := range tolerations {
		tol := &tolerations[i]
		if !capacity.Tolerates([]corev1.Toleration{*tol}, t) {
			continue
		}
		matched = true
		if tol.TolerationSeconds == nil {
			return time.Time{}, true, false
		}
		if seconds == nil || *tol.TolerationSeconds < *seconds {
			s := *tol.TolerationSeconds
			seconds = &s
		}
	}
	if !matched || *seconds <= 0 {
		return time.Time{}, matched, true
	}
	if t.TimeAdded == nil {
		return time.Time{}, true, true
	}
	return t.TimeAdded.Add(time.Duration(*seconds) * time.Second), true, true
}
