package detector

import (
	"sync"
	"time"
)

// Batching holds the templates a policy has not claimed yet while more of
// them keep arriving, so that a burst of applies to the hub is served before
// the pipeline's reaction to it (about fifteen hub writes per template)
// competes with it for the hub's apiserver. A template waits until no new
// one has arrived for QuietPeriod, and never longer than MaxWait after it
// was first seen: a lone template is held QuietPeriod, a steady stream
// MaxWait at most. It is the templates' counterpart of kube-controller-
// manager's --endpoint-updates-batch-period.
//
// A zero Batching (or a nil one) holds nothing.
type Batching struct {
	// QuietPeriod is how long no new template must have arrived before the
	// ones waiting are handled.
	QuietPeriod time.Duration
	// MaxWait bounds how long a template waits, however long the burst.
	MaxWait time.Duration

	mu          sync.Mutex
	lastArrival time.Time
	firstSeen   map[TemplateKey]time.Time
}

// Wait tells how much longer the new template key is to wait at now; zero
// when it is to be handled now. The first call for a key is its arrival.
func (b *Batching) Wait(key TemplateKey, now time.Time) time.Duration {
	if b == nil || b.QuietPeriod <= 0 || b.MaxWait <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	first, seen := b.firstSeen[key]
	if !seen {
		if b.firstSeen == nil {
			b.firstSeen = map[TemplateKey]time.Time{}
		}
		first = now
		b.firstSeen[key] = now
		if now.After(b.lastArrival) {
			b.lastArrival = now
		}
	}
	until := b.lastArrival.Add(b.QuietPeriod)
	if deadline := first.Add(b.MaxWait); deadline.Before(until) {
		until = deadline
	}
	wait := until.Sub(now)
	if wait <= 0 {
		delete(b.firstSeen, key)
		return 0
	}
	return wait
}

// Forget drops a key that is not to be claimed after all: its template
// gone, no longer selected, or not to be propagated.
func (b *Batching) Forget(key TemplateKey) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.firstSeen, key)
}
