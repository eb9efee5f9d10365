package scheduler

import (
	"fmt"
	"strings"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/affinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// PluginClusterAffinity and PluginSpreadConstraint name the stages that
// drop members outside the filter plugins, in explanations.
const (
	PluginClusterAffinity  = "ClusterAffinity"
	PluginSpreadConstraint = "SpreadConstraint"
)

// termOutcome is one affinity term tried. Per-member slices are indexed like
// the snapshot; per-candidate ones like feasible.
type termOutcome struct {
	term *affinity.Term

	affinityReason []string // "" when the member matches the term
	feasible       []int    // members that passed every filter
	scores         []int64  // weighted total per candidate
	pluginScores   []int64  // candidate k, plugin p at k*len(scorers)+p
	excluded       map[int]string

	selected []int   // members chosen, in pick order
	replicas []int64 // replicas of selected[k]
	err      *Error
}

// tryTerms tries the affinity terms in order, from the one in force at the
// last decision unless a rebalance was asked for, and keeps the first that
// places the binding. When none does, the error lists each term's failure.
func (d *decision) tryTerms() error {
	start := 0
	if !d.in.Rebalance && d.in.ObservedAffinityName != "" {
		for i, t := range d.terms {
			if t.Name == d.in.ObservedAffinityName {
				start = i
			}
		}
	}
	var tried []*termOutcome
	for _, t := range d.terms[start:] {
		d.outcome = d.tryTerm(t)
		tried = append(tried, d.outcome)
		if d.outcome.err == nil {
			d.tried = tried
			return nil
		}
	}
	d.tried = tried
	last := d.outcome.err
	if len(tried) == 1 {
		return last
	}
	parts := make([]string, len(tried))
	for i, o := range tried {
		parts[i] = fmt.Sprintf("affinity %q: %s", o.term.Name, o.err.Message)
	}
	return &Error{Reason: last.Reason, Message: strings.Join(parts, "; ")}
}

// tryTerm filters by the term, scores, selects under spread constraints and
// assigns replicas.
func (d *decision) tryTerm(t *affinity.Term) *termOutcome {
	n := d.snap.Len()
	o := &termOutcome{term: t, affinityReason: make([]string, n), feasible: make([]int, 0, n)}
	short := 0
	for i := range n {
		if ok, reason := t.Match(d.snap.Member(i)); !ok {
			o.affinityReason[i] = reason
			continue
		}
		switch d.base[i].code {
		case framework.Fits, framework.Held:
			o.feasible = append(o.feasible, i)
		case framework.Insufficient:
			short++
		}
	}
	if len(o.feasible) == 0 {
		if short > 0 {
			o.err = unschedulable("%s", d.unfitSummary(o))
		} else {
			o.err = noClusterFit("%s", d.unfitSummary(o))
		}
		return o
	}
	d.score(o)
	if o.err = d.selectMembers(o); o.err != nil {
		return o
	}
	o.err = d.assign(o)
	return o
}

// score runs the score plugins over the term's candidates.
func (d *decision) score(o *termOutcome) {
	ns := len(d.s.scorers)
	o.scores = make([]int64, len(o.feasible))
	o.pluginScores = make([]int64, len(o.feasible)*ns)
	raw := make([]int64, len(o.feasible))
	for p, ws := range d.s.scorers {
		for k, i := range o.feasible {
			raw[k] = ws.Plugin.Score(&d.cycle, d.snap.Member(i))
		}
		if norm, ok := ws.Plugin.(framework.ScoreNormalizer); ok {
			norm.NormalizeScores(&d.cycle, o.feasible, raw)
		}
		for k := range o.feasible {
			s := min(max(raw[k], 0), framework.MaxScore)
			o.pluginScores[k*ns+p] = s
			o.scores[k] += ws.Weight * s
		}
	}
}

func reasonOf(e *Error) string {
	if e == nil {
		return workv1alpha1.BindingReasonSuccess
	}
	return e.Reason
}
