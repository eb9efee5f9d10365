// Package assumed keeps the capacity the scheduler has just handed out until
// the members' estimators have seen it, so that many bindings scheduled
// against one snapshot do not all land on the same "free" member.
//
// An entry records a binding's replicas assumed on a member, their
// requirement, when they were assumed and the member's capacity model time
// at that moment. It counts against the member's capacity until the member
// publishes a model observed after the assignment (plus an optional grace
// for the Pods to be created), and it is replaced whenever its binding is
// scheduled again or forgotten when the binding goes.
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

	mu       sync.Mutex
	members  map[string]*book
	bindings map[string]map[string]struct{} // binding -> members holding its entries
}

// Entry is replicas of one binding assumed on one member.
type Entry struct {
	Binding     string
	Requirement *capacity.Requirement
	Replicas    int64
	AssumedAt   time.Time
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
}

// New returns an empty ledger. An entry counts until a model observed more
// than grace after the assignment; grace covers the time a Work takes to
// become Pods the estimator can see (0 trusts any newer model).
func New(grace time.Duration) *Ledger {
	return &Ledger{grace: grace, members: map[string]*book{}, bindings: map[string]map[string]struct{}{}}
}

// live says whether e still counts against a model observed at observed.
func (l *Ledger) live(e *Entry, observed time.Time) bool {
	return !observed.After(e.AssumedAt.Add(l.grace))
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
	if !hasOwn && b.cachedBase == base {
		return b.cached, 0
	}
	observed := base.ObservedTime()
	model, own := base, int64(0)
	for i := range b.entries {
		e := &b.entries[i]
		if !l.live(e, observed) {
			continue
		}
		if e.Binding == exclude {
			own += e.Replicas
			continue
		}
		model, _ = model.Place(e.Requirement, e.Replicas)
	}
	if !hasOwn {
		b.cachedBase, b.cached = base, model
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
// Members the binding left lose its entries.
func (l *Ledger) Commit(binding string, req *capacity.Requirement, at time.Time, assignments []Assignment) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
		observed := a.Base.ObservedTime()
		pending := max(0, a.Replicas-a.Previous)
		if had {
			pending += l.pendingOf(binding, a.Member, observed)
			l.removeEntries(binding, a.Member)
		}
		pending = min(a.Replicas, pending)
		l.prune(a.Member, observed)
		if pending > 0 {
			l.append(a.Member, Entry{Binding: binding, Requirement: req, Replicas: pending, AssumedAt: at, ModelObservedTime: observed})
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

// Prune drops the entries that a model observed at observed no longer needs,
// and forgets members that left the fleet. observed maps member names to
// their model times; members absent from it are gone.
func (l *Ledger) Prune(observed map[string]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for member := range l.members {
		t, ok := observed[member]
		if !ok {
			for binding := range l.bindings {
				l.drop(binding, member)
			}
			delete(l.members, member)
			continue
		}
		l.prune(member, t)
	}
}

func (l *Ledger) pendingOf(binding, member string, observed time.Time) int64 {
	var n int64
	if b := l.members[member]; b != nil {
		for i := range b.entries {
			if e := &b.entries[i]; e.Binding == binding && l.live(e, observed) {
				n += e.Replicas
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
	if b.cachedBase != nil && l.live(&e, b.cachedBase.ObservedTime()) {
		// Extend the cached model instead of rebuilding it: decisions in a
		// burst each add an entry and then read every member.
		b.cached, _ = b.cached.Place(e.Requirement, e.Replicas)
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
	b.cachedBase, b.cached = nil, nil
}

// prune drops entries of member that a model observed at observed has seen.
func (l *Ledger) prune(member string, observed time.Time) {
	b := l.members[member]
	if b == nil || !observed.After(b.prunedAt) {
		return
	}
	b.prunedAt = observed
	kept := b.entries[:0]
	for _, e := range b.entries {
		if l.live(&e, observed) {
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
	b.cachedBase, b.cached = nil, nil
}
