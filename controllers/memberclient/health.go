package memberclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flotilla-io/flotilla/controllers/metrics"
)

// Health is what the hub has learnt, from its own requests, of whether each
// member answers. Every request to a member goes through the transport that
// Wrap returns: a request that gets no answer (connection refused or reset,
// timeout, EOF) marks the member unreachable for a backoff that doubles
// with each failure in a row (MinBackoff up to MaxBackoff); any answer, even
// an error status, marks it reachable again. While a member is unreachable
// its requests fail at once with *UnreachableError instead of waiting for a
// timeout, so a hung member costs the hub one timeout per backoff, not one
// per request. When the backoff has passed, requests go through again: the
// first answer closes the gate and the member is reported on Recovered, so
// its waiting Works are applied at once.
type Health struct {
	// MinBackoff is how long a member is left alone after its first failure
	// in a row. Default 2s.
	MinBackoff time.Duration
	// MaxBackoff bounds the doubling. Default 5s: the backoff is also how
	// late the hub learns that a member answers again (only a request
	// tells it), so a long one left a member that hung for a minute
	// waiting up to minutes for its Works; a short one costs a hung member
	// one bounded request every few seconds.
	MaxBackoff time.Duration

	now func() time.Time

	mu        sync.Mutex
	members   map[string]*memberHealth
	recovered chan string
}

type memberHealth struct {
	failures int
	cause    error
	retryAt  time.Time
}

// UnreachableError is returned for a member that did not answer its last
// request; RetryIn is how long until the hub tries it again.
type UnreachableError struct {
	Member  string
	Cause   error
	RetryIn time.Duration
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("member %s did not answer the hub's last request (%v); next attempt in %s",
		e.Member, e.Cause, e.RetryIn.Round(time.Second))
}

func (e *UnreachableError) Unwrap() error { return e.Cause }

// The default backoffs of a member that does not answer.
const (
	DefaultMinBackoff = 2 * time.Second
	DefaultMaxBackoff = 5 * time.Second
)

// NewHealth returns a Health with default backoffs.
func NewHealth() *Health {
	return &Health{recovered: make(chan string, 64)}
}

func (h *Health) defaults() {
	if h.MinBackoff <= 0 {
		h.MinBackoff = min(DefaultMinBackoff, max(h.MaxBackoff, time.Millisecond))
	}
	if h.MaxBackoff < h.MinBackoff {
		h.MaxBackoff = max(DefaultMaxBackoff, h.MinBackoff)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.members == nil {
		h.members = map[string]*memberHealth{}
	}
	if h.recovered == nil {
		h.recovered = make(chan string, 64)
	}
}

// Check returns nil when requests to member may be made now, and an
// *UnreachableError while its backoff runs.
func (h *Health) Check(member string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.defaults()
	m := h.members[member]
	if m == nil || m.failures == 0 {
		return nil
	}
	if wait := m.retryAt.Sub(h.now()); wait > 0 {
		return &UnreachableError{Member: member, Cause: m.cause, RetryIn: wait}
	}
	return nil
}

// Unreachable reports whether member's last request went unanswered, even
// when its backoff has passed and a new attempt may be made.
func (h *Health) Unreachable(member string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.members[member]
	return m != nil && m.failures > 0
}

// Observe records the outcome of one request to member: err nil means the
// member answered.
func (h *Health) Observe(member string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.defaults()
	m := h.members[member]
	if err == nil {
		if m != nil && m.failures > 0 {
			delete(h.members, member)
			metrics.MemberUnreachable.DeleteLabelValues(member)
			select {
			case h.recovered <- member:
			default: // a slow reader misses a wake-up, never a Work: each is requeued at its retry
			}
		}
		return
	}
	if m == nil {
		m = &memberHealth{}
		h.members[member] = m
	}
	m.failures++
	m.cause = err
	metrics.MemberUnreachable.WithLabelValues(member).Set(1)
	backoff := h.MinBackoff << min(m.failures-1, 16)
	if backoff > h.MaxBackoff || backoff <= 0 {
		backoff = h.MaxBackoff
	}
	m.retryAt = h.now().Add(backoff)
}

// Forget drops what is known of member (it left the fleet).
func (h *Health) Forget(member string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.members, member)
	metrics.MemberUnreachable.DeleteLabelValues(member)
}

// Recovered delivers the name of each member that answers again after it
// was unreachable.
func (h *Health) Recovered() <-chan string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.defaults()
	return h.recovered
}

// Wrap returns a rest.Config WrapTransport for member's connections.
func (h *Health) Wrap(member string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &observedTransport{member: member, health: h, next: next}
	}
}

type observedTransport struct {
	member string
	health *Health
	next   http.RoundTripper
}

func (t *observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.health.Check(t.member); err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	switch {
	case err == nil:
		t.health.Observe(t.member, nil)
	case errors.Is(err, context.Canceled) && req.Context().Err() != nil:
		// The caller gave up (shutdown, a newer reconcile): no news of the member.
	default:
		t.health.Observe(t.member, err)
	}
	return resp, err
}
