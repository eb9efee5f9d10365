package lease

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var (
	t0  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key = client.ObjectKey{Namespace: "flotilla-es-edge-1", Name: "flotilla-agent"}
)

// hub is a fake hub that records when the agent wrote the Lease, and
// refuses writes while down.
type hub struct {
	client.Client
	clock *clocktesting.FakeClock

	mu       sync.Mutex
	down     bool
	attempts []time.Duration // since t0
}

func newHub(clock *clocktesting.FakeClock) *hub {
	h := &hub{clock: clock}
	write := func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.attempts = append(h.attempts, h.clock.Now().Sub(t0))
		if h.down {
			return apierrors.NewServiceUnavailable("hub apiserver is down")
		}
		return nil
	}
	h.Client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := write(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	return h
}

func (h *hub) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

func (h *hub) writes() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.attempts)
}

func (h *hub) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := h.Get(context.Background(), key, l); err != nil {
		t.Fatalf("read the Lease: %v", err)
	}
	return l
}

// start runs a renewer of 40s renewed every 10s against the fake hub.
func start(t *testing.T, h *hub) {
	t.Helper()
	r := &Renewer{Client: h, Key: key, Holder: "flotilla-agent-7d9f", Duration: 40 * time.Second, Interval: 10 * time.Second, Clock: h.clock}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// step advances the clock once the renewer waits on it, i.e. once the
// renewal before has been written (or has failed).
func step(t *testing.T, c *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !c.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the renewer never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	c.Step(d)
}

func seconds(s ...int) []time.Duration {
	out := make([]time.Duration, 0, len(s))
	for _, n := range s {
		out = append(out, time.Duration(n)*time.Second)
	}
	return out
}

func TestRenewerCreatesTheLeaseThenRenewsItEveryInterval(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	h := newHub(clock)
	start(t, h)

	step(t, clock, 9*time.Second) // not yet an interval: nothing is written
	step(t, clock, time.Second)
	step(t, clock, 10*time.Second)
	step(t, clock, 0) // wait for the last renewal to be written

	if got, want := h.writes(), seconds(0, 10, 20); !slices.Equal(got, want) {
		t.Errorf("Lease written at %v after start, want %v", got, want)
	}
	l := h.lease(t)
	if ptr.Deref(l.Spec.HolderIdentity, "") != "flotilla-agent-7d9f" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != 40 ||
		!l.Spec.RenewTime.Time.Equal(t0.Add(20*time.Second)) || !l.Spec.AcquireTime.Time.Equal(t0) {
		t.Errorf("Lease spec %+v, want holder flotilla-agent-7d9f, 40s, renewed at t0+20s, acquired at t0", l.Spec)
	}
}

func TestFailedRenewalsAreRetriedSoonerUntilTheHubAnswersAgain(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	h := newHub(clock)
	start(t, h)

	step(t, clock, 0) // created at t0
	h.setDown(true)
	step(t, clock, 10*time.Second) // fails at 10s; retried after 1s
	step(t, clock, time.Second)    // fails at 11s; then after 2s
	step(t, clock, 2*time.Second)  // fails at 13s; then after 4s
	step(t, clock, 4*time.Second)  // fails at 17s; then after 8s
	step(t, clock, 0)
	h.setDown(false)
	step(t, clock, 8*time.Second)  // renewed at 25s; back to every 10s
	step(t, clock, 10*time.Second) // renewed at 35s
	step(t, clock, 0)

	if got, want := h.writes(), seconds(0, 10, 11, 13, 17, 25, 35); !slices.Equal(got, want) {
		t.Errorf("Lease writes at %v after start, want %v", got, want)
	}
	if l := h.lease(t); !l.Spec.RenewTime.Time.Equal(t0.Add(35 * time.Second)) {
		t.Errorf("Lease renewed at %s, want t0+35s", l.Spec.RenewTime)
	}
}

func TestRetryWaitNeverExceedsTheInterval(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	h := newHub(clock)
	h.setDown(true)
	start(t, h)

	// Fails at 0, 1, 3, 7, 15 (waits 1, 2, 4, 8), then every 10s, not 16.
	for _, d := range seconds(1, 2, 4, 8, 10, 10) {
		step(t, clock, d)
	}
	step(t, clock, 0)
	if got, want := h.writes(), seconds(0, 1, 3, 7, 15, 25, 35); !slices.Equal(got, want) {
		t.Errorf("Lease writes at %v after start, want %v", got, want)
	}
}

func TestALeaseTakenMeanwhileIsReadAgainAndTakenBack(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	h := newHub(clock)
	r := &Renewer{Client: h, Key: key, Holder: "agent-b", Duration: 40 * time.Second, Interval: 10 * time.Second, Clock: clock}
	ctx := context.Background()
	if err := r.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	// A previous agent Pod takes the Lease back in between.
	l := h.lease(t)
	l.Spec.HolderIdentity = ptr.To("agent-a")
	if err := h.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	clock.Step(10 * time.Second)
	if err := r.Renew(ctx); err != nil {
		t.Fatalf("renewal of a Lease changed meanwhile: %v; want it read again and renewed", err)
	}
	l = h.lease(t)
	if ptr.Deref(l.Spec.HolderIdentity, "") != "agent-b" || ptr.Deref(l.Spec.LeaseTransitions, 0) != 1 || !l.Spec.AcquireTime.Time.Equal(t0.Add(10*time.Second)) {
		t.Errorf("Lease spec %+v, want agent-b holding it again since t0+10s after 1 transition", l.Spec)
	}
}
