// Package tracker keeps, per namespace, the FederatedResourceQuotas in force
// and what every binding uses, and answers the scheduler's quota questions
// (it is the scheduler's scheduler.BindingQuota). It is fed from binding and
// quota events by controllers/quota and knows nothing of controllers.
//
// A binding's account has two parts: what the API server last showed
// (observed, from spec.clusters) and what the scheduler just placed and has
// not been seen written yet (reserved). It counts as the larger of the two,
// key by key, so usage is never under-counted: a scale-up counts from the
// moment it is decided (two decisions racing for the last of a quota cannot
// both get it, since the scheduler serialises decisions and records each
// before the next), a scale-down only once it is written. A reservation
// ends when the API server shows the same usage, or after ReservationTTL
// (a decision whose write failed).
//
// A binding also counts what its Works carry once rendered (rendered.go:
// ChargeRendered, under the lock the scheduler holds around its decisions,
// and status.renderedUsage as the API server shows it): it uses the larger
// of placement and rendering, key by key.
//
// Every change that frees quota in a namespace with quotas (a binding
// shrinks or goes, a quota grows or goes) is reported to subscribers, which
// retry the bindings waiting on quota; every change of usage is reported
// for the quotas' status.
package tracker

import (
	"errors"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// Defaults of Options.
const (
	DefaultReservationTTL = time.Minute
	DefaultSyncTimeout    = time.Minute
)

// Options tune a Tracker.
type Options struct {
	// ReservationTTL is how long a decision the API server has not shown
	// yet keeps counting. Default DefaultReservationTTL.
	ReservationTTL time.Duration
	// SyncTimeout is how long a check waits for MarkSynced before it
	// refuses. Default DefaultSyncTimeout.
	SyncTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Change is what subscribers are told: usage or quotas of Namespace
// changed, and whether some quota was freed.
type Change struct {
	Namespace string
	Freed     bool
}

// ErrNotSynced refuses checks made before the tracker has seen every
// binding and quota.
var ErrNotSynced = errors.New("quota usage is not loaded yet; retried shortly")

// Tracker accounts quota usage per namespace. It is safe for concurrent use.
type Tracker struct {
	opts Options

	// decide serialises the scheduler's decisions (its DecisionLock) with
	// ChargeRendered: a check and its charge are one step.
	decide sync.Mutex

	mu          sync.Mutex
	spaces      map[string]*space
	subscribers []func(Change)

	synced     chan struct{}
	syncedOnce sync.Once
}

var (
	_ scheduler.BindingQuota       = &Tracker{}
	_ scheduler.DecisionSerialiser = &Tracker{}
)

// DecisionLock is the lock the scheduler holds around decide-and-commit.
func (t *Tracker) DecisionLock() sync.Locker { return &t.decide }

// space is one namespace's quotas and accounts.
type space struct {
	quotas   map[string]corev1.ResourceList // quota name → overall
	accounts map[string]*account            // binding key → account
	// used is the sum of every account's effective usage.
	used corev1.ResourceList
	// reserved names the accounts holding a reservation or a rendered
	// charge the API server does not show yet.
	reserved map[string]struct{}
}

// account is one binding's usage.
type account struct {
	observed   corev1.ResourceList
	reserved   corev1.ResourceList // nil: none
	reservedAt time.Time
	// renderedSeen is the binding's status.renderedUsage: what its Works
	// carry, as the API server last showed it.
	renderedSeen corev1.ResourceList
	// renderedHeld is what ChargeRendered charged and the API server does
	// not show yet (nil: none).
	renderedHeld corev1.ResourceList
	renderedAt   time.Time
}

// effective is the larger of every part, key by key.
func (a *account) effective() corev1.ResourceList {
	out := a.observed
	for _, l := range []corev1.ResourceList{a.reserved, a.renderedSeen, a.renderedHeld} {
		if l != nil {
			out = quota.Max(out, l)
		}
	}
	return out
}

// holds reports whether the account holds something the API server does
// not show yet.
func (a *account) holds() bool { return a.reserved != nil || a.renderedHeld != nil }

// New returns a Tracker that answers no check until MarkSynced.
func New(opts Options) *Tracker {
	if opts.ReservationTTL <= 0 {
		opts.ReservationTTL = DefaultReservationTTL
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tracker{opts: opts, spaces: map[string]*space{}, synced: make(chan struct{})}
}

// Subscribe calls f after every change of a namespace with quotas. f runs
// on the goroutine that made the change, outside the tracker's lock, and
// must not block.
func (t *Tracker) Subscribe(f func(Change)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.subscribers = append(t.subscribers, f)
}

// MarkSynced says every binding and quota that existed at start has been
// observed: checks are answered from now on.
func (t *Tracker) MarkSynced() { t.syncedOnce.Do(func() { close(t.synced) }) }

// Synced reports whether MarkSynced was called.
func (t *Tracker) Synced() bool {
	select {
	case <-t.synced:
		return true
	default:
		return false
	}
}

// SetQuota records a quota's overall (a copy is kept).
func (t *Tracker) SetQuota(namespace, name string, overall corev1.ResourceList) {
	t.change(namespace, func(s *space) effect {
		old, had := s.quotas[name]
		if had && quota.Equal(old, overall) && sameKeys(old, overall) {
			return effect{}
		}
		s.quotas[name] = overall.DeepCopy()
		return effect{changed: true, freed: had && grew(old, overall)}
	})
}

// RemoveQuota forgets a quota: whatever it limited is free.
func (t *Tracker) RemoveQuota(namespace, name string) {
	t.change(namespace, func(s *space) effect {
		if _, had := s.quotas[name]; !had {
			return effect{}
		}
		delete(s.quotas, name)
		return effect{changed: true, freed: true}
	})
}

// ObserveBinding records what the API server shows of a binding's
// placement (its status.renderedUsage unknown: see ObserveRenderedBinding).
func (t *Tracker) ObserveBinding(key, namespace string, w quota.Workload, deleting bool) {
	t.ObserveRenderedBinding(key, namespace, w, nil, deleting)
}

// ObserveRenderedBinding records what the API server shows of a binding:
// its placement and rendered, the usage of what its Works carry
// (status.renderedUsage; nil before it was first rendered). The binding
// uses the larger of the two, key by key. A binding being deleted uses
// nothing: deletions are never held back by quota.
func (t *Tracker) ObserveRenderedBinding(key, namespace string, w quota.Workload, rendered corev1.ResourceList, deleting bool) {
	usage := corev1.ResourceList{}
	if !deleting {
		usage = quota.Usage(w)
	} else {
		rendered = nil
	}
	t.change(namespace, func(s *space) effect {
		return s.update(key, func(a *account) {
			a.observed = usage
			if deleting || (a.reserved != nil && quota.Equal(a.reserved, usage)) {
				a.reserved = nil
			}
			a.renderedSeen = rendered.DeepCopy()
			if deleting || (a.renderedHeld != nil && rendered != nil && quota.Equal(a.renderedHeld, rendered)) {
				a.renderedHeld = nil
			}
		})
	})
}

// ForgetBinding drops a deleted binding's account.
func (t *Tracker) ForgetBinding(key, namespace string) {
	t.change(namespace, func(s *space) effect {
		a, ok := s.accounts[key]
		if !ok {
			return effect{}
		}
		before := a.effective()
		s.used = quota.Subtract(s.used, before)
		delete(s.accounts, key)
		delete(s.reserved, key)
		used := !quota.Equal(before, nil)
		return effect{changed: used, freed: used}
	})
}

// CheckPlacement refuses a placement that would take the namespace past
// one of its quotas, on a key the placement grows. A placement with fewer
// replicas than the one in force is never refused. The error is a
// *quota.ExceededError naming every quota and key.
func (t *Tracker) CheckPlacement(p scheduler.Placement) error {
	if err := t.waitSynced(); err != nil {
		return err
	}
	after := quota.Workload{APIVersion: p.APIVersion, Kind: p.Kind, Requirements: p.Requirements, Clusters: p.Clusters}
	current := quota.Workload{Clusters: p.Current}
	if after.Replicas() < current.Replicas() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spaces[p.Namespace]
	if s == nil || len(s.quotas) == 0 {
		return nil
	}
	t.expireReservations(s)
	var before corev1.ResourceList
	if a := s.accounts[p.Key]; a != nil {
		before = a.effective()
	}
	return s.check(p.Namespace, quota.Subtract(quota.Usage(after), before))
}

// CheckQuota is the keyless check (scheduler.QuotaChecker): deltaReplicas
// more replicas of req. The scheduler asks CheckPlacement instead.
func (t *Tracker) CheckQuota(namespace string, req *workv1alpha1.ReplicaRequirements, deltaReplicas int64) error {
	if deltaReplicas <= 0 {
		return nil
	}
	if err := t.waitSynced(); err != nil {
		return err
	}
	request := quota.Usage(quota.Workload{Requirements: req, Clusters: []workv1alpha1.TargetCluster{{Replicas: int32(deltaReplicas)}}})
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spaces[namespace]
	if s == nil || len(s.quotas) == 0 {
		return nil
	}
	t.expireReservations(s)
	return s.check(namespace, request)
}

// Placed reserves what a committed decision uses until the API server shows
// it. The scheduler calls it under the lock that serialises decisions.
func (t *Tracker) Placed(p scheduler.Placement) {
	usage := quota.Usage(quota.Workload{APIVersion: p.APIVersion, Kind: p.Kind, Requirements: p.Requirements, Clusters: p.Clusters})
	now := t.opts.Now()
	t.change(p.Namespace, func(s *space) effect {
		return s.update(p.Key, func(a *account) {
			if quota.Equal(usage, a.observed) {
				a.reserved = nil
				return
			}
			a.reserved, a.reservedAt = usage, now
		})
	})
}

// Used is what the namespace's bindings use, every key they touch.
func (t *Tracker) Used(namespace string) corev1.ResourceList {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spaces[namespace]
	if s == nil {
		return corev1.ResourceList{}
	}
	return s.used.DeepCopy()
}

// Quotas are the overalls of the namespace's quotas by name.
func (t *Tracker) Quotas(namespace string) map[string]corev1.ResourceList {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]corev1.ResourceList{}
	if s := t.spaces[namespace]; s != nil {
		for name, overall := range s.quotas {
			out[name] = overall.DeepCopy()
		}
	}
	return out
}

func (t *Tracker) waitSynced() error {
	select {
	case <-t.synced:
		return nil
	default:
	}
	timer := time.NewTimer(t.opts.SyncTimeout)
	defer timer.Stop()
	select {
	case <-t.synced:
		return nil
	case <-timer.C:
		return ErrNotSynced
	}
}

// effect is what a change did: changed usage or quotas, freed quota.
type effect struct{ changed, freed bool }

func (e effect) or(o effect) effect {
	return effect{changed: e.changed || o.changed, freed: e.freed || o.freed}
}

// change runs f on the namespace's space under the lock, then tells the
// subscribers when something changed in a namespace that has or had quotas.
func (t *Tracker) change(namespace string, f func(*space) effect) {
	t.mu.Lock()
	s := t.spaces[namespace]
	if s == nil {
		s = &space{quotas: map[string]corev1.ResourceList{}, accounts: map[string]*account{}, used: corev1.ResourceList{}, reserved: map[string]struct{}{}}
		t.spaces[namespace] = s
	}
	hadQuotas := len(s.quotas) > 0
	e := f(s)
	if len(s.quotas) > 0 {
		e = e.or(t.expireReservations(s))
	}
	notify := e.changed && (hadQuotas || len(s.quotas) > 0)
	if len(s.quotas) == 0 && len(s.accounts) == 0 {
		delete(t.spaces, namespace)
	}
	subscribers := t.subscribers
	t.mu.Unlock()
	if !notify {
		return
	}
	for _, sub := range subscribers {
		sub(Change{Namespace: namespace, Freed: e.freed})
	}
}

// expireReservations ends the reservations older than the TTL.
func (t *Tracker) expireReservations(s *space) effect {
	var e effect
	if len(s.reserved) == 0 {
		return e
	}
	deadline := t.opts.Now().Add(-t.opts.ReservationTTL)
	for key := range s.reserved {
		a := s.accounts[key]
		if a == nil {
			continue
		}
		if a.reserved != nil && a.reservedAt.Before(deadline) {
			e = e.or(s.update(key, func(a *account) { a.reserved = nil }))
		}
		if a.renderedHeld != nil && a.renderedAt.Before(deadline) {
			e = e.or(s.update(key, func(a *account) { a.renderedHeld = nil }))
		}
	}
	return e
}

// update changes one account and keeps used and the reservation index in
// step; freed when the account's usage decreased on some key.
func (s *space) update(key string, f func(*account)) effect {
	a := s.accounts[key]
	if a == nil {
		a = &account{observed: corev1.ResourceList{}}
		s.accounts[key] = a
	}
	before := a.effective()
	f(a)
	after := a.effective()
	if !a.holds() {
		delete(s.reserved, key)
	} else {
		s.reserved[key] = struct{}{}
	}
	if quota.Equal(before, after) {
		return effect{}
	}
	s.used = quota.Add(quota.Subtract(s.used, before), after)
	return effect{changed: true, freed: quota.Decreased(before, after)}
}

// check tests a request against every quota of the namespace, in name order.
func (s *space) check(namespace string, request corev1.ResourceList) error {
	names := make([]string, 0, len(s.quotas))
	for name := range s.quotas {
		names = append(names, name)
	}
	sort.Strings(names)
	var violations []quota.Violation
	for _, name := range names {
		violations = append(violations, quota.Check(namespace+"/"+name, s.quotas[name], s.used, request)...)
	}
	if len(violations) == 0 {
		return nil
	}
	return &quota.ExceededError{Violations: violations}
}

// grew reports whether overall grants more than old of some key: a larger
// limit, or a key no longer limited.
func grew(old, overall corev1.ResourceList) bool {
	for name, limit := range old {
		now, ok := overall[name]
		if !ok || now.Cmp(limit) > 0 {
			return true
		}
	}
	return false
}

// sameKeys reports whether a and b limit the same keys.
func sameKeys(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			return false
		}
	}
	return true
}
