package pacing

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultProgressInterval is how often, at most, an object's status on the
// hub moves for progress alone (replica counts, messages) while its state
// stays the same.
const DefaultProgressInterval = 500 * time.Millisecond

// Reports paces the status reports written to the hub. A report that
// changes a state someone acts on (a condition's status or reason, a
// member's health, whether a manifest applied) is written at once; one that
// only moves progress within a state (a Deployment's ready count going
// from 1 to 2 of 3) waits until Interval has passed since the object's last
// report, and is folded into whichever report comes first. In a burst each
// member's object reports several times on its way to Ready, and each was
// a status write of its Work and one of its binding on the hub.
//
// Reports remembers an object only for Interval after its last report. It
// is safe for concurrent use; the zero value paces nothing.
type Reports struct {
	// Interval is the least time between two reports of one object that
	// move progress only. Zero or less paces nothing. Set before use, or
	// through SetInterval.
	Interval time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	last    map[types.NamespacedName]time.Time
	pruneAt int
}

// Wait is how long a report of key that only moves progress must still
// wait; 0 when it may be written now. A nil Reports never waits.
func (r *Reports) Wait(key types.NamespacedName) time.Duration {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Interval <= 0 {
		return 0
	}
	at, ok := r.last[key]
	if !ok {
		return 0
	}
	if wait := r.Interval - r.now().Sub(at); wait > 0 {
		return wait
	}
	delete(r.last, key)
	return 0
}

// Written records that a report of key was written now.
func (r *Reports) Written(key types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Interval <= 0 {
		return
	}
	if r.last == nil {
		r.last = map[types.NamespacedName]time.Time{}
	}
	now := r.now()
	r.last[key] = now
	if len(r.last) > max(r.pruneAt, 1024) {
		// Keep only what can still be waited for: the map holds the
		// objects reported within the last Interval, not every one ever.
		for k, at := range r.last {
			if now.Sub(at) >= r.Interval {
				delete(r.last, k)
			}
		}
		r.pruneAt = 2 * len(r.last)
	}
}

// SetInterval changes Interval while the Reports is in use (a benchmark
// comparing settings in one running manager).
func (r *Reports) SetInterval(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Interval = d
}

func (r *Reports) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}
