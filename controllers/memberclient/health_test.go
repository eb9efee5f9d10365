package memberclient

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestHealth() (*Health, *clock) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	h := &Health{MinBackoff: 5 * time.Second, MaxBackoff: 40 * time.Second, now: c.now}
	return h, c
}

func retryIn(t *testing.T, h *Health, member string) time.Duration {
	t.Helper()
	var u *UnreachableError
	if err := h.Check(member); !errors.As(err, &u) {
		t.Fatalf("Check(%s) = %v, want an UnreachableError", member, err)
	}
	return u.RetryIn
}

func TestAMemberThatDoesNotAnswerIsLeftAloneForADoublingBackoff(t *testing.T) {
	h, c := newTestHealth()
	refused := syscall.ECONNREFUSED
	if err := h.Check("m1"); err != nil {
		t.Fatalf("an unknown member is reachable, got %v", err)
	}
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second} {
		h.Observe("m1", refused)
		if got := retryIn(t, h, "m1"); got != want {
			t.Fatalf("failure %d: retry in %s, want %s", i+1, got, want)
		}
		c.advance(want)
		if err := h.Check("m1"); err != nil {
			t.Fatalf("failure %d: after the backoff a new attempt may be made, got %v", i+1, err)
		}
		if !h.Unreachable("m1") {
			t.Fatalf("failure %d: still unreachable until it answers", i+1)
		}
	}
	if err := h.Check("m2"); err != nil {
		t.Fatalf("another member is not affected, got %v", err)
	}
	h.Observe("m1", nil)
	if err := h.Check("m1"); err != nil || h.Unreachable("m1") {
		t.Fatalf("an answer closes the gate, got %v", err)
	}
	select {
	case m := <-h.Recovered():
		if m != "m1" {
			t.Fatalf("recovered %q, want m1", m)
		}
	default:
		t.Fatal("an answer after failures reports the member on Recovered")
	}
	h.Observe("m1", refused)
	if got := retryIn(t, h, "m1"); got != 5*time.Second {
		t.Fatalf("after recovering, the backoff starts again at the minimum, got %s", got)
	}
}

func TestAnAnswerFromAHealthyMemberReportsNoRecovery(t *testing.T) {
	h, _ := newTestHealth()
	h.Observe("m1", nil)
	select {
	case m := <-h.Recovered():
		t.Fatalf("no recovery expected, got %q", m)
	default:
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTheTransportFailsFastWhileAMemberIsUnreachable(t *testing.T) {
	h, c := newTestHealth()
	calls := 0
	answer := errors.New("i/o timeout")
	next := roundTripper(func(*http.Request) (*http.Response, error) {
		calls++
		if answer != nil {
			return nil, answer
		}
		return &http.Response{StatusCode: http.StatusForbidden}, nil
	})
	rt := h.Wrap("m1")(next)
	req, _ := http.NewRequest(http.MethodGet, "https://m1.invalid/api", nil)
	if _, err := rt.RoundTrip(req); err == nil {
		t.Fatal("the first request's error is returned")
	}
	if _, err := rt.RoundTrip(req); err == nil || calls != 1 {
		t.Fatalf("a request during the backoff fails without reaching the member: err %v, calls %d", err, calls)
	}
	c.advance(5 * time.Second)
	answer = nil
	if resp, err := rt.RoundTrip(req); err != nil || resp.StatusCode != http.StatusForbidden || calls != 2 {
		t.Fatalf("after the backoff the request goes through: %v, calls %d", err, calls)
	}
	if h.Unreachable("m1") {
		t.Fatal("an error status is still an answer: the member is reachable")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	answer = context.Canceled
	if _, err := rt.RoundTrip(req.WithContext(ctx)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if h.Unreachable("m1") {
		t.Fatal("a request the caller cancelled says nothing of the member")
	}
}
