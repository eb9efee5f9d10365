package pacing

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
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
	// Clock is the clock; the real one when nil.
	Clock clock.Clock

	mu      sync.Mutex
	written *cache.Expiring // key → when its last report was written
}

// Wait is how long a report of key that only moves progress must still
// wait; 0 when it may be written now. A nil Reports never waits.
func (r *Reports) Wait(key types.NamespacedName) time.Duration {
	if r == nil {
		return 0
	}
	interval, written := r.state()
	if interval <= 0 {
		return 0
	}
	at, ok := written.Get(key)
	if !ok {
		return 0
	}
	return max(interval-r.clock().Since(at.(time.Time)), 0)
}

// Written records that a report of key was written now.
func (r *Reports) Written(key types.NamespacedName) {
	if r == nil {
		return
	}
	if interval, written := r.state(); interval > 0 {
		written.Set(key, r.clock().Now(), interval)
	}
}

// SetInterval changes Interval while the Reports is in use (a benchmark
// comparing settings in one running manager).
func (r *Reports) SetInterval(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Interval = d
}

func (r *Reports) state() (time.Duration, *cache.Expiring) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = cache.NewExpiringWithClock(r.clock())
	}
	return r.Interval, r.written
}

func (r *Reports) clock() clock.Clock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}
