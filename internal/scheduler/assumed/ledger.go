// Package assumed keeps the capacity the scheduler has just handed out until
// the members' estimators have seen it, so that many bindings scheduled
// against one snapshot do not all land on the same "free" member.
//
// An entry records a binding's replicas assumed on a member, their
// requirement, when they were assumed and the member's capacity model time
// at that moment. A replica is charged once: by its entry until the member's
// model shows its Pod, by the model from then on. The model shows it when
// the count of bound Pods in the binding's namespace reaches the entry's
// target (the count the decision saw, plus every replica assumed there and
// not yet seen); replicas short of the target stay held, the rest are
// released at once. An entry whose Pods never show (a Pod left Pending, a
// Work that failed) counts until the member publishes a model observed a
// grace after the member applied the Work carrying the entry (Decided and
// Applied tell it which and when), or at most a wall-clock bound after the
// assignment (WithMaxHold): before its Work is in the member, no Pod of it
// can show, however long the hub takes to get it there. Entries are
// replaced whenever their binding is scheduled again and forgotten when
// the binding goes.
//
// The count is per namespace, not per binding, because Pods carry no mark of
// the binding that made them: Pods of the same namespace made by someone
// else can release a hold early (the member's scheduler then leaves the
// extra Pod Pending), and Pods deleted meanwhile keep it longer (until the
// grace): both bounded, the second on the safe side.
package assumed

import (
	"sync"
	"time"

	"github.com/flotilla-io/flotilla/internal/capacity"
)

// Ledger is safe for concurrent use. Reads never change what later reads
// see: they only fill a cache of adjusted models.
type Ledger struct {
	grace time.Duration
	// maxHold bounds an entry by the wall clock (0: no bound): a member
	// whose model does not change publishes only at its estimator's
	// heartbeat, and a hold whose Pods never show must not wait that long.
	maxHold time.Duration
	clock   func() time.Time
	// at is the clock read once per call, under mu.
	at time.Time

	mu       sync.Mutex
	members  map[string]*book
	bindings map[string]map[string]struct{} // binding -> members holding its entries
}

// Entry is replicas of one binding assumed on one member.
type Entry struct {
	Binding string
	// Namespace of the binding's Pods in the member; "" for cluster-scoped
	// templates, whose entries only the grace releases.
	Namespace   string
	Requirement *capacity.Requirement
	Replicas    int64
	// TargetPods is the namespace's count of bound Pods at which every one
	// of Replicas has been seen.
	TargetPods int64
	AssumedAt  time.Time
	// Generation is the binding's generation whose Works carry these
	// replicas (0 until Decided).
	Generation int64
	// AppliedAt is when the member was seen to have applied those Works
	// (zero until Applied); the grace counts from it.
	AppliedAt time.Time
	// ModelObservedTime is the member's model time when the entry was made,
	// kept for explanations: expiry compares a newer model's time with
	// AssumedAt, the moment the replicas were handed out.
	ModelObservedTime time.Time
}

// book is one member's entries and its cached adjusted model.
type book struct {
	entries []Entry
	// cachedBase and cached are the last base model seen and that model less
	// every live entry.
	cachedBase *capacity.Model
	cached     *capacity.Model
	// prunedAt is the model time of the last prune: entries only expire
	// when a member's model time moves forward, so pruning again at the
	// same time would find nothing.
	prunedAt time.Time
	// cachedUntil is when the first entry counted in cached reaches
	// maxHold, rounded up to holdResolution (zero: never), after which
	// cached is stale.
	cachedUntil time.Time
}

// New returns an empty ledger. An entry counts until a model observed more
// than grace after its Work was applied in the member; grace covers the
// time an applied Work takes to become Pods the estimator can see (0
// trusts any newer model). Without a wall-clock bound (WithMaxHold), an
// entry whose Work is not known to be applied counts the grace from the
// assignment instead.
func New(grace time.Duration) *Ledger {
	return &Ledger{grace: grace, clock: time.Now, members: map[string]*book{}, bindings: map[string]map[string]struct{}{}}
}

// WithMaxHold bounds every entry to d after its assignment, whatever the
// member's model says (0: no bound); clock is the wall clock (time.Now
// when nil). It returns l.
func (l *Ledger) WithMaxHold(d time.Duration, clock func() time.Time) *Ledger {
	l.maxHold = d
	if clock != nil {
		l.clock = clock
	}
	return l
}

// tick reads the clock for one call; the caller holds l.mu.
func (l *Ledger) tick() {
	if l.maxHold > 0 {
		l.at = l.clock()
	}
}

// live says whether e still counts against a model observed at observed.
func (l *Ledger) live(e *Entry, observed time.Time) bool {
	if l.maxHold > 0 && !l.at.Before(e.AssumedAt.Add(l.maxHold)) {
		return false
	}
	start := e.AppliedAt
	if start.IsZero() {
		if l.maxHold > 0 {
			// Not in the member yet: a newer model cannot have seen it.
			return true
		}
		start = e.AssumedAt
	}
	return !observed.After(start.Add(l.grace))
}

// until is when e stops counting by the wall clock (zero: never).
func (l *Ledger) until(e *Entry) time.Time {
	if l.maxHold <= 0 {
		return time.Time{}
	}
	return e.AssumedAt.Add(l.maxHold)
}

// holdResolution is how closely a cached adjusted model follows the ends of
// holds by maxHold: it is rebuilt at the first whole second after the
// earliest end, so a hold may count up to a second past maxHold. In a long
// burst against a model that does not change, the oldest hold ends with
// nearly every decision; rebuilding each member's model from all its held
// entries every time made a decision cost O(held entries)
// (BenchmarkScheduleABurstPastMaxHold).
const holdResolution = time.Second

// cacheUntil is when a cached model counting an entry that stops counting
// at until goes stale: until rounded up to holdResolution (zero: never).
func cacheUntil(until time.Time) time.Time {
	if until.IsZero() {
		return until
	}
	r := until.Truncate(holdResolution)
	if r.Before(until) {
		r = r.Add(holdResolution)
	}
	return r
}

// earlier is the earlier of two bounds, zero meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// held is how many of e's replicas m has not seen yet.
func (l *Ledger) held(e *Entry, m *capacity.Model) int64 {
	if !l.live(e, m.ObservedTime()) {
		return 0
	}
	if e.Namespace == "" {
		return e.Replicas
	}
	return min(e.Replicas, max(0, e.TargetPods-m.BoundPods(e.Namespace)))
}

// Adjusted returns base less the live entries on member of every binding but
// exclude, and the live replicas assumed for exclude (which the caller
// already counts in the binding's own placement). A nil base is returned as is.
func (l *Ledger) Adjusted(member string, base *capacity.Model, exclude string) (*capacity.Model, int64) {
	models, own := make([]*capacity.Model, 1), make([]int64, 1)
	l.AdjustAll([]string{member}, []*capacity.Model{base}, exclude, models, own)
	return models[0], own[0]
}

// AdjustAll is Adjusted for many members under one lock: models[i] and
// ownUnseen[i] are filled for names[i] and bases[i]. A decision reads every
// member of the fleet, so per-call locking would dominate.
func (l *Ledger) AdjustAll(names []string, bases []*capacity.Model, exclude string, models []*capacity.Model, ownUnseen []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick()
	excluded := l.bindings[exclude]
	for i, name := range names {
		models[i], ownUnseen[i] = bases[i], 0
		if bases[i] == nil || len(l.members) == 0 {
			continue
		}
		b := l.members[name]
		if b == nil || len(b.entries) == 0 {
			continue
		}
		_, hasOwn := excluded[name]
		models[i], ownUnseen[i] = l.adjust(b, name, bases[i], exclude, hasOwn)
	}
}

// adjust is base less b's live entries but exclude's; the caller holds l.mu.
func (l *Ledger) adjust(b *book, member string, base *capacity.Model, exclude string, hasOwn bool) (*capacity.Model, int64) {
	if !hasOwn && b.cachedBase == base && (b.cachedUntil.IsZero() || l.at.Before(b.cachedUntil)) {
		return b.cached, 0
	}
	model, own := base, int64(0)
	var until time.Time
	for i := range b.entries {
		e := &b.entries[i]
		n := l.held(e, base)
		if n == 0 {
			continue
		}
		if e.Binding == exclude {
			own += n
			continue
		}
		model, _ = model.Place(e.Requirement, n)
		until = earlier(until, l.until(e))
	}
	if !hasOwn {
		b.cachedBase, b.cached, b.cachedUntil = base, model, cacheUntil(until)
	}
	return model, own
}

// Assignment is one member's part of a binding's new placement.
type Assignment struct {
	Member string
	// Replicas is what the member holds after the decision.
	Replicas int64
	// Previous is what it held before.
	Previous int64
	// Base is the member's model the decision used; nil when it had none
	// (nothing to hold back then).
	Base *capacity.Model
}

// Commit records a binding's new placement, replacing its earlier entries.
// On each member the binding's unseen replicas become its earlier unseen
// ones plus those added now, never more than it now holds: replicas it
// already held and the estimator has seen are in the model, not here.
// Members the binding left lose its entries. namespace is where the
// binding's Pods go in members ("" for a cluster-scoped template).
func (l *Ledger) Commit(binding, namespace string, req *capacity.Requirement, at time.Time, assignments []Assignment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick()
	// Detach the binding's member set and reuse it for the new one: a burst
	// of decisions should not churn maps.
	held := l.bindings[binding]
	delete(l.bindings, binding)
	kept := make([]string, 0, len(assignments))
	for _, a := range assignments {
		// Only members in the binding's set hold its entries: skip the scan
		// of every other member's book.
		_, had := held[a.Member]
		delete(held, a.Member)
		if a.Base == nil {
			if had {
				l.removeEntries(binding, a.Member)
			}
			continue
		}
		added := max(0, a.Replicas-a.Previous)
		pending := added
		// The Works carrying replicas held from before: kept when this
		// decision adds none, so that their application still counts.
		var generation int64
		var appliedAt time.Time
		if had {
			if e := l.entryOf(binding, a.Member); e != nil && added == 0 {
				generation, appliedAt = e.Generation, e.AppliedAt
			}
			pending += l.pendingOf(binding, a.Member, a.Base)
			l.removeEntries(binding, a.Member)
		}
		pending = min(a.Replicas, pending)
		l.prune(a.Member, a.Base)
		if pending > 0 {
			// Seen once the namespace's Pods the model counts, those still
			// unseen from earlier decisions and these have all shown up.
			target := a.Base.BoundPods(namespace) + l.unseenIn(a.Member, namespace, a.Base) + pending
			l.append(a.Member, Entry{
				Binding: binding, Namespace: namespace, Requirement: req, Replicas: pending,
				TargetPods: target, AssumedAt: at, ModelObservedTime: a.Base.ObservedTime(),
				Generation: generation, AppliedAt: appliedAt,
			})
			kept = append(kept, a.Member)
		}
	}
	for member := range held {
		l.removeEntries(binding, member)
	}
	if len(kept) == 0 {
		return
	}
	if held == nil {
		held = make(map[string]struct{}, len(kept))
	}
	clear(held)
	for _, m := range kept {
		held[m] = struct{}{}
	}
	l.bindings[binding] = held
}

// Decided records that binding's placement was written at generation: its
// entries made since (Commit) are carried by the Works rendered from it.
func (l *Ledger) Decided(binding string, generation int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for member := range l.bindings[binding] {
		if b := l.members[member]; b != nil {
			for i := range b.entries {
				if e := &b.entries[i]; e.Binding == binding && e.Generation == 0 {
					e.Generation = generation
				}
			}
		}
	}
}

// Applied records that member applied, at `at`, binding's Works rendered
// from generation: the grace of its entries carried by them (Decided at
// that generation or before) counts from then. Later reports change
// nothing.
func (l *Ledger) Applied(binding, member string, generation int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.bindings[binding][member]; !ok {
		return
	}
	b := l.members[member]
	for i := range b.entries {
		if e := &b.entries[i]; e.Binding == binding && e.AppliedAt.IsZero() && e.Generation > 0 && e.Generation <= generation {
			e.AppliedAt = at
			b.cachedBase, b.cached, b.cachedUntil = nil, nil, time.Time{}
		}
	}
}

// Forget drops every entry of binding, e.g. when it is deleted.
func (l *Ledger) Forget(binding string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for member := range l.bindings[binding] {
		l.drop(binding, member)
	}
}

// Entries lists the entries on member, oldest first (for explanations and tests).
func (l *Ledger) Entries(member string) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.members[member]; b != nil {
		return append([]Entry(nil), b.entries...)
	}
	return nil
}

// Prune drops the entries that the members' current models have seen, and
// forgets members that left the fleet: models[i] is names[i]'s model, and a
// member absent from names or without a model is gone.
func (l *Ledger) Prune(names []string, models []*capacity.Model) {
	current := make(map[string]*capacity.Model, len(names))
	for i, name := range names {
		if models[i] != nil {
			current[name] = models[i]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick()
	for member := range l.members {
		m, ok := current[member]
		if !ok {
			for binding := range l.bindings {
				l.drop(binding, member)
			}
			delete(l.members, member)
			continue
		}
		l.prune(member, m)
	}
}

// entryOf is binding's entry on member (Commit keeps one), nil if none.
func (l *Ledger) entryOf(binding, member string) *Entry {
	if b := l.members[member]; b != nil {
		for i := range b.entries {
			if b.entries[i].Binding == binding {
				return &b.entries[i]
			}
		}
	}
	return nil
}

// pendingOf is binding's replicas on member that m has not seen.
func (l *Ledger) pendingOf(binding, member string, m *capacity.Model) int64 {
	var n int64
	if b := l.members[member]; b != nil {
		for i := range b.entries {
			if e := &b.entries[i]; e.Binding == binding {
				n += l.held(e, m)
			}
		}
	}
	return n
}

// unseenIn is every replica assumed in namespace on member that m has not
// seen; 0 for cluster-scoped templates.
func (l *Ledger) unseenIn(member, namespace string, m *capacity.Model) int64 {
	var n int64
	if b := l.members[member]; b != nil && namespace != "" {
		for i := range b.entries {
			if e := &b.entries[i]; e.Namespace == namespace {
				n += l.held(e, m)
			}
		}
	}
	return n
}

// append adds e to member's book; the caller records the member in the
// binding's set.
func (l *Ledger) append(member string, e Entry) {
	b := l.members[member]
	if b == nil {
		b = &book{}
		l.members[member] = b
	}
	b.entries = append(b.entries, e)
	if b.cachedBase != nil {
		// Extend the cached model instead of rebuilding it: decisions in a
		// burst each add an entry and then read every member.
		if n := l.held(&e, b.cachedBase); n > 0 {
			b.cached, _ = b.cached.Place(e.Requirement, n)
			b.cachedUntil = earlier(b.cachedUntil, cacheUntil(l.until(&e)))
		}
	}
}

// drop removes binding's entries from member and member from its set.
func (l *Ledger) drop(binding, member string) {
	set, ok := l.bindings[binding]
	if !ok {
		return
	}
	if _, ok := set[member]; !ok {
		return
	}
	delete(set, member)
	if len(set) == 0 {
		delete(l.bindings, binding)
	}
	l.removeEntries(binding, member)
}

// removeEntries removes binding's entries from member's book, leaving the
// binding's member set to the caller.
func (l *Ledger) removeEntries(binding, member string) {
	b := l.members[member]
	if b == nil {
		return
	}
	kept := b.entries[:0]
	for _, e := range b.entries {
		if e.Binding != binding {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(b.entries) {
		return
	}
	clear(b.entries[len(kept):])
	b.entries = kept
	b.cachedBase, b.cached, b.cachedUntil = nil, nil, time.Time{}
}

// prune drops entries of member that m has seen whole.
func (l *Ledger) prune(member string, m *capacity.Model) {
	b := l.members[member]
	if b == nil || m == nil || !m.ObservedTime().After(b.prunedAt) {
		return
	}
	b.prunedAt = m.ObservedTime()
	kept := b.entries[:0]
	for _, e := range b.entries {
		if l.held(&e, m) > 0 {
			kept = append(kept, e)
			continue
		}
		if set := l.bindings[e.Binding]; set != nil {
			delete(set, member)
			if len(set) == 0 {
				delete(l.bindings, e.Binding)
			}
		}
	}
	if len(kept) == len(b.entries) {
		return
	}
	clear(b.entries[len(kept):])
	b.entries = kept
	b.cachedBase, b.cached, b.cachedUntil = nil, nil, time.Time{}
}

// Restore records a placement this process did not decide — a previous
// leader's, read back from the binding — as if Commit had: assignments give
// what the binding holds on each member (Replicas) and how many of those
// the member has not seen (Replicas-Previous), assigned at `at`. Members
// whose entry would no longer count (the model observed past the grace, or
// the hold past its bound) are skipped, so restoring an old placement
// holds nothing.
func (l *Ledger) Restore(binding, namespace string, req *capacity.Requirement, at time.Time, assignments []Assignment) {
	l.mu.Lock()
	l.tick()
	live := assignments[:0:0]
	for _, a := range assignments {
		if a.Base == nil || a.Replicas <= a.Previous {
			continue
		}
		if e := (Entry{AssumedAt: at}); l.live(&e, a.Base.ObservedTime()) {
			live = append(live, a)
		}
	}
	l.mu.Unlock()
	if len(live) > 0 {
		l.Commit(binding, namespace, req, at, live)
	}
}
