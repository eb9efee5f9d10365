package scheduler

import (
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/membernames"
	"github.com/flotilla-io/flotilla/internal/scheduler/affinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/spread"
)

// decision is one binding's way through snapshot → filter → score → select →
// assign. Per-member slices are indexed like the snapshot.
type decision struct {
	s     *Scheduler
	snap  *framework.Snapshot
	in    *Input
	cycle framework.Cycle
	req   *capacity.Requirement
	terms []*affinity.Term

	// base is each member's verdict from the term-independent filters.
	base []verdict

	constraints []spread.Constraint
	groupKeys   []groupKey

	// outcome is the term in force once decide returns; tried lists every
	// term tried, outcome last. mandatory is how many of outcome's first
	// selected members the spread constraints need.
	outcome   *termOutcome
	tried     []*termOutcome
	mandatory int

	quotaRefused bool
}

// decide runs one decision; ledger may be nil (pure preview).
func (s *Scheduler) decide(snap *framework.Snapshot, in *Input, ledger *assumed.Ledger) (*decision, *Result, error) {
	d := &decision{s: s, snap: snap, in: in}
	if err := d.prepare(ledger); err != nil {
		return d, &Result{}, err
	}
	d.filter()
	err := d.tryTerms()
	if len(in.EvictedFrom) > 0 && (err != nil || len(d.placement().Clusters) == 0) {
		// Every member it could go to is one it is being evicted from: a
		// rolling outage moved it off each in turn, and graceful eviction
		// keeps the last copies until a replacement is healthy — which can
		// only be on one of them. Those that are fit again (the filters
		// still drop the sick ones) take it back, where its copy still runs.
		back := *in
		back.EvictedFrom = nil
		if d2, res2, err2 := s.decide(snap, &back, ledger); err2 == nil && len(d2.placement().Clusters) > 0 {
			return d2, res2, nil
		}
	}
	if err == nil {
		err = d.checkQuota()
	}
	res := d.result()
	res.UnknownMembers = membernames.Message(membernames.InPlacement(in.Placement, func(name string) bool {
		_, ok := snap.Lookup(name)
		return ok
	}))
	if e, ok := err.(*Error); ok && res.UnknownMembers != "" {
		// The user's mistake first: every real member being "not in
		// clusterNames" follows from it.
		err = &Error{Reason: e.Reason, Message: res.UnknownMembers + "; " + e.Message}
	}
	return d, res, err
}

// prepare validates the input and fills the cycle: strategy, weights,
// and each member's available replicas after assumed capacity.
func (d *decision) prepare(ledger *assumed.Ledger) error {
	in := d.in
	if in.Replicas < 0 {
		return schedulerError("replicas must not be negative, got %d", in.Replicas)
	}
	var err error
	c := &d.cycle
	c.Snapshot = d.snap
	c.Replicas = int64(in.Replicas)
	c.APIVersion, c.Kind = in.APIVersion, in.Kind
	c.Served = d.snap.ServedBy(in.APIVersion, in.Kind)
	c.EvictedFrom = in.EvictedFrom
	if p := in.Placement; p != nil {
		c.Tolerations = p.ClusterTolerations
		if c.Strategy, err = framework.StrategyOf(p.ReplicaScheduling); err != nil {
			return schedulerError("placement: %v", err)
		}
	}
	if d.terms, err = affinity.TermsOf(in.Placement); err != nil {
		return schedulerError("placement: %v", err)
	}
	if d.constraints, d.groupKeys, err = spreadConstraints(in.Placement); err != nil {
		return schedulerError("placement: %v", err)
	}
	if c.Strategy == framework.StaticWeighted {
		if c.Weights, err = staticWeights(d.snap, in.Placement.ReplicaScheduling.WeightPreference); err != nil {
			return schedulerError("placement: %v", err)
		}
	}
	c.Current = make(map[string]int64, len(in.Current))
	for _, tc := range in.Current {
		c.Current[tc.Name] += int64(tc.Replicas)
	}
	d.req = capacity.NewRequirement(in.Requirements)
	d.measure(ledger)
	return nil
}

// measure fills cycle.Available: what each member can hold of this binding,
// its own replicas there included.
func (d *decision) measure(ledger *assumed.Ledger) {
	n := d.snap.Len()
	models := d.snap.Models()
	ownUnseen := make([]int64, n)
	if ledger != nil {
		models = make([]*capacity.Model, n)
		ledger.AdjustAll(d.snap.Names(), d.snap.Models(), d.in.Key, models, ownUnseen)
	}
	d.cycle.Available = make([]int64, n)
	for i := range n {
		if models[i] == nil {
			d.cycle.Available[i] = framework.CapacityUnknown
			continue
		}
		// The binding's replicas the model has seen occupy room that is the
		// binding's own to keep; those it has not seen were left out of the
		// adjusted model.
		ownSeen := max(0, d.cycle.Current[d.snap.Member(i).Name]-ownUnseen[i])
		d.cycle.Available[i] = satAdd(models[i].Fit(d.req), ownSeen)
	}
}

// verdict is a filter Status and the index of the filter that gave it,
// kept compact because there is one per member per decision.
type verdict struct {
	reason string
	code   framework.Code
	plugin int32
}

// filter runs the term-independent filters on every member.
func (d *decision) filter() {
	n := d.snap.Len()
	d.base = make([]verdict, n)
	for i := range n {
		m := d.snap.Member(i)
		var held *verdict
		rejected := false
		for p, f := range d.s.filters {
			st := f.Filter(&d.cycle, m)
			if st.Code == framework.Held {
				if held == nil {
					held = &verdict{reason: st.Reason, code: st.Code, plugin: int32(p)}
				}
				continue
			}
			if !st.Passed() {
				d.base[i] = verdict{reason: st.Reason, code: st.Code, plugin: int32(p)}
				rejected = true
				break
			}
		}
		if held != nil && !rejected {
			d.base[i] = *held
		}
	}
}

// checkQuota asks the quota checker about the replicas the placement adds
// or, for a BindingQuota, about the whole placement.
func (d *decision) checkQuota() error {
	var err error
	if bq, ok := d.s.quota.(BindingQuota); ok {
		err = bq.CheckPlacement(d.placement())
	} else {
		var after, before int64
		for _, r := range d.outcome.replicas {
			after += r
		}
		for _, r := range d.cycle.Current {
			before += r
		}
		err = d.s.quota.CheckQuota(d.in.Namespace, d.in.Requirements, after-before)
	}
	if err != nil {
		d.quotaRefused = true
		return &Error{Reason: workv1alpha1.BindingReasonQuotaExceeded, Message: err.Error()}
	}
	return nil
}

// placement is the decision's claim on quota.
func (d *decision) placement() Placement {
	in := d.in
	return Placement{
		Key: in.Key, Namespace: in.Namespace, APIVersion: in.APIVersion, Kind: in.Kind,
		Requirements: in.Requirements, Clusters: d.targetClusters(d.outcome), Current: in.Current,
	}
}

// assignments lists the ledger's view of the placement in force: every
// member holding replicas now or before.
func (d *decision) assignments() []assumed.Assignment {
	o := d.outcome
	out := make([]assumed.Assignment, 0, len(d.cycle.Current)+int(min(d.cycle.Replicas, int64(len(o.selected)))))
	placed := make(map[string]bool, len(d.cycle.Current))
	for k, i := range o.selected {
		m := d.snap.Member(i)
		prev, held := d.cycle.Current[m.Name]
		if held {
			placed[m.Name] = true
		}
		if o.replicas[k] == 0 && prev == 0 {
			continue // selected but given nothing: no entry to make or replace
		}
		out = append(out, assumed.Assignment{Member: m.Name, Replicas: o.replicas[k], Previous: prev, Base: m.Model})
	}
	for name, prev := range d.cycle.Current {
		if placed[name] {
			continue
		}
		var base *capacity.Model
		if m, ok := d.snap.Lookup(name); ok {
			base = m.Model
		}
		out = append(out, assumed.Assignment{Member: name, Replicas: 0, Previous: prev, Base: base})
	}
	return out
}

func satAdd(a, b int64) int64 {
	const most = 1<<63 - 1
	if a > most-b {
		return most
	}
	return a + b
}
