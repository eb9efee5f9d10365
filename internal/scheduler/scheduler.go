package scheduler

import (
	"sync"
	"time"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/plugins"
)

// Snapshot is the immutable fleet view decisions run against.
type Snapshot = framework.Snapshot

// NewSnapshot compiles members into a Snapshot.
func NewSnapshot(members []clusterv1alpha1.MemberCluster) (*Snapshot, error) {
	return framework.NewSnapshot(members)
}

// Scheduler places bindings. It holds the assumed ledger and the plugins;
// it is safe for concurrent use.
type Scheduler struct {
	filters []framework.FilterPlugin
	scorers []framework.WeightedScorer
	ledger  *assumed.Ledger
	quota   QuotaChecker
	now     func() time.Time

	// commit serialises decide-then-commit in Schedule, so that every
	// decision sees the capacity assumed by the one before it. It is the
	// quota checker's DecisionLock when it has one (see DecisionSerialiser).
	commit sync.Locker
}

// Option configures a Scheduler.
type Option func(*Scheduler)

// WithLedger shares a ledger (e.g. with a scheduler that forgets bindings on delete).
func WithLedger(l *assumed.Ledger) Option { return func(s *Scheduler) { s.ledger = l } }

// WithQuotaChecker plugs in federated quota.
func WithQuotaChecker(q QuotaChecker) Option { return func(s *Scheduler) { s.quota = q } }

// WithClock sets the clock stamped on assumed capacity.
func WithClock(now func() time.Time) Option { return func(s *Scheduler) { s.now = now } }

// WithPlugins replaces the default filter and score plugins.
func WithPlugins(filters []framework.FilterPlugin, scorers []framework.WeightedScorer) Option {
	return func(s *Scheduler) { s.filters, s.scorers = filters, scorers }
}

// New returns a Scheduler with the default plugins, a fresh ledger (no
// grace), no quota and the wall clock unless options say otherwise.
func New(opts ...Option) *Scheduler {
	s := &Scheduler{
		filters: plugins.DefaultFilters(),
		scorers: plugins.DefaultScorers(),
		quota:   NoQuota{},
		now:     time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	s.commit = &sync.Mutex{}
	if ds, ok := s.quota.(DecisionSerialiser); ok {
		s.commit = ds.DecisionLock()
	}
	if s.ledger == nil {
		s.ledger = assumed.New(0)
	}
	return s
}

// Ledger is the scheduler's assumed ledger.
func (s *Scheduler) Ledger() *assumed.Ledger { return s.ledger }

// Schedule places in against snap and, on success, records the replicas it
// added in the ledger so that the next decision does not hand out the same
// capacity. The error is an *Error whose Reason is a binding condition reason;
// the Result is returned either way for its Explanation.
func (s *Scheduler) Schedule(snap *Snapshot, in Input) (*Result, error) {
	if in.Key == "" {
		return &Result{}, schedulerError("binding has no key for the assumed ledger")
	}
	s.commit.Lock()
	defer s.commit.Unlock()
	d, res, err := s.decide(snap, &in, s.ledger)
	if err != nil {
		return res, err
	}
	s.ledger.Commit(in.Key, in.Namespace, d.req, s.now(), d.assignments())
	if bq, ok := s.quota.(BindingQuota); ok {
		bq.Placed(d.placement())
	}
	return res, nil
}

// Preview places in as Schedule would, reading the ledger but writing
// nothing: for `kubectl flotilla explain` and policy dry runs.
func (s *Scheduler) Preview(snap *Snapshot, in Input) (*Result, error) {
	_, res, err := s.decide(snap, &in, s.ledger)
	return res, err
}

// Forget drops what the ledger assumed for a binding, e.g. when it is deleted.
func (s *Scheduler) Forget(key string) { s.ledger.Forget(key) }

// Preview places in against snap with the default plugins, no ledger and no
// quota: a pure function of its input.
func Preview(snap *Snapshot, in Input) (*Result, error) {
	s := &Scheduler{filters: plugins.DefaultFilters(), scorers: plugins.DefaultScorers(), quota: NoQuota{}, now: time.Now}
	_, res, err := s.decide(snap, &in, nil)
	return res, err
}
