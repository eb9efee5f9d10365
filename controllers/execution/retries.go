package execution

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// maxRejectedRetry bounds the backoff of a Work whose member rejects it.
const maxRejectedRetry = 5 * time.Minute

// rejections paces the retries of Works whose member rejected a manifest
// (invalid, denied by the member's admission): such a Work is tried again
// after the base interval, doubled with each rejection in a row up to
// maxRejectedRetry, and at once when it changes (a new generation: the
// binding rendered something else).
type rejections struct {
	mu    sync.Mutex
	works map[types.NamespacedName]rejection
}

type rejection struct {
	generation int64
	count      int
}

// retryAfter records the outcome of applying generation of the Work key and
// returns when to try it again: base when it was not rejected.
func (r *rejections) retryAfter(key types.NamespacedName, generation int64, rejected bool, base time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !rejected {
		delete(r.works, key)
		return base
	}
	if r.works == nil {
		r.works = map[types.NamespacedName]rejection{}
	}
	e := r.works[key]
	if e.generation != generation {
		e = rejection{generation: generation}
	}
	e.count++
	r.works[key] = e
	d := base << min(e.count-1, 16)
	if d > maxRejectedRetry || d <= 0 {
		d = maxRejectedRetry
	}
	return d
}

// forget drops a Work that is gone.
func (r *rejections) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.works, key)
}
