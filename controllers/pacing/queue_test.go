package pacing

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/throttle"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// fakeClock advances only when the queue sleeps.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err() == nil
}

type run struct {
	mu     sync.Mutex
	acted  []string
	at     []time.Duration
	marks  []string
	notDue map[string]bool
	fleet  throttle.Fleet
}

func newQueue(cfg throttle.Config, clock *fakeClock, r *run) *Queue {
	return &Queue{
		Name: "test", Throttle: throttle.New(cfg), Now: clock.Now, Sleep: clock.Sleep,
		Fleet: func() throttle.Fleet { r.mu.Lock(); defer r.mu.Unlock(); return r.fleet },
		Due: func(_ context.Context, k Key) (bool, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return !r.notDue[k.Name], nil
		},
		Act: func(_ context.Context, k Key) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.acted = append(r.acted, k.Name)
			r.at = append(r.at, clock.Now().Sub(t0))
			return nil
		},
		Mark: func(_ context.Context, k Key, throttled bool, _ string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.marks = append(r.marks, fmt.Sprintf("%s=%v", k.Name, throttled))
			return nil
		},
	}
}

// drain serves the queue until it is empty.
func drain(t *testing.T, q *Queue) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q.init()
	log := q.logger(ctx)
	for q.Len() > 0 {
		k, _ := q.next(ctx)
		q.serve(ctx, log, k)
	}
}

func TestQueueActsInOrderAtTheRateAndOncePerKey(t *testing.T) {
	clock := &fakeClock{now: t0}
	r := &run{fleet: throttle.Fleet{Total: 4, Counted: true}, notDue: map[string]bool{"c": true}}
	q := newQueue(throttle.Config{Rate: 0.5, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}, clock, r)
	for _, k := range []string{"a", "b", "a", "c", "d"} {
		q.Add(Key{Kind: "ResourceBinding", Namespace: "ns", Name: k})
	}
	drain(t, q)
	if !slices.Equal(r.acted, []string{"a", "b", "d"}) {
		t.Errorf("acted on %v, want a, b, d (a once, c no longer due)", r.acted)
	}
	if want := []time.Duration{0, 2 * time.Second, 4 * time.Second}; !slices.Equal(r.at, want) {
		t.Errorf("acted at %v, want %v", r.at, want)
	}
	if len(r.marks) != 0 {
		t.Errorf("marks %v, want none in normal times", r.marks)
	}
}

func TestQueueStopsDuringAStormMarksTheWaitingAndResumes(t *testing.T) {
	clock := &fakeClock{now: t0}
	r := &run{fleet: throttle.Fleet{Unhealthy: 3, Total: 4, Counted: true}}
	q := newQueue(throttle.Config{Rate: 1, SecondaryRate: 0, UnhealthyThreshold: 0.55}, clock, r)
	q.Add(Key{Name: "a"})
	q.Add(Key{Name: "b"})
	// The storm ends after 10 s of polling.
	q.Sleep = func(ctx context.Context, d time.Duration) bool {
		clock.Sleep(ctx, d)
		if clock.Now().Sub(t0) >= 10*time.Second {
			r.mu.Lock()
			r.fleet = throttle.Fleet{Unhealthy: 1, Total: 4, Counted: true}
			r.mu.Unlock()
		}
		return true
	}
	drain(t, q)
	if !slices.Equal(r.acted, []string{"a", "b"}) || r.at[0] < 10*time.Second {
		t.Errorf("acted on %v at %v, want a and b after the storm (10s)", r.acted, r.at)
	}
	want := []string{"a=true", "b=true", "a=false", "b=false"}
	if !slices.Equal(r.marks, want) {
		t.Errorf("marks %v, want %v", r.marks, want)
	}
}

func TestAKeyAskedForWhileServedIsServedAgain(t *testing.T) {
	clock := &fakeClock{now: t0}
	r := &run{fleet: throttle.Fleet{Total: 2, Counted: true}}
	q := newQueue(throttle.Config{Rate: 1, SecondaryRate: 0.1, UnhealthyThreshold: 0.55}, clock, r)
	act := q.Act
	asked := false
	q.Act = func(ctx context.Context, k Key) error {
		if !asked {
			asked = true
			q.Add(k) // e.g. another member's taint arrived while it was evicted
		}
		return act(ctx, k)
	}
	q.Add(Key{Name: "a"})
	q.Add(Key{Name: "b"})
	drain(t, q)
	if !slices.Equal(r.acted, []string{"a", "b", "a"}) {
		t.Errorf("acted on %v, want a, b, then a again", r.acted)
	}
}

// Whatever the secondary rate, nothing is evicted before the fleet is
// counted, nor while every member is unhealthy (full disruption).
func TestQueueEvictsNothingBeforeTheFleetIsCountedNorWhenAllAreUnhealthy(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fleet throttle.Fleet
	}{
		{"not counted", throttle.Fleet{}},
		{"all 3 unhealthy", throttle.Fleet{Unhealthy: 3, Total: 3, Counted: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: t0}
			r := &run{fleet: tt.fleet}
			q := newQueue(throttle.Config{Rate: 1, SecondaryRate: 0.5, UnhealthyThreshold: 0.55}, clock, r)
			q.Add(Key{Name: "a"})
			q.Sleep = func(ctx context.Context, d time.Duration) bool {
				clock.Sleep(ctx, d)
				r.mu.Lock()
				defer r.mu.Unlock()
				if len(r.acted) > 0 {
					return true
				}
				if clock.Now().Sub(t0) >= time.Minute { // one member is healthy again
					r.fleet = throttle.Fleet{Unhealthy: 2, Total: 3, Counted: true}
				}
				return true
			}
			drain(t, q)
			if !slices.Equal(r.acted, []string{"a"}) || r.at[0] < time.Minute {
				t.Errorf("acted on %v at %v, want a only once a member is healthy and counted (1m)", r.acted, r.at)
			}
		})
	}
}

// A queue still holding keys when its context ends returns: serve gives up
// at once on an ended context, and the manager waits for Start to stop.
func TestStartReturnsWhenStoppedWithKeysWaiting(t *testing.T) {
	clock := &fakeClock{now: t0}
	r := &run{fleet: throttle.Fleet{Unhealthy: 4, Total: 4, Counted: true}}
	// Every member unhealthy: nothing is acted on, both keys wait.
	q := newQueue(throttle.Config{Rate: 1, SecondaryRate: 0, UnhealthyThreshold: 0.55}, clock, r)
	q.Sleep = func(ctx context.Context, d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
			return true
		}
	}
	q.Add(Key{Name: "a"})
	q.Add(Key{Name: "b"})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- q.Start(ctx) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return within 5 s of its context ending, with keys waiting")
	}
	if q.Len() != 2 {
		t.Errorf("%d keys waiting after stop, want both kept", q.Len())
	}
}
