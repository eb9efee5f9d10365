// Package pacing sets the pace of what the controllers do to many objects.
//
// Queue runs an action on objects one at a time, in the order they were
// asked for, no faster than an internal/throttle.Throttle allows: the
// eviction and failback controllers use it so that a fleet-wide event moves
// workloads at a controlled rate, and not at all during a storm when the
// secondary rate is 0. Keys waiting while evictions are slowed or stopped
// are told so (Mark), and told again when they are not any more.
//
// Reports paces status writes to the hub that only move progress.
package pacing

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/flotilla-io/flotilla/internal/throttle"
)

// Key names one object: its kind (e.g. ResourceBinding), namespace and name.
type Key struct {
	Kind, Namespace, Name string
}

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// Queue is a deduplicated FIFO of keys served by one worker.
type Queue struct {
	// Name names the queue in logs.
	Name string
	// Throttle paces the actions.
	Throttle *throttle.Throttle
	// Fleet reports the members' health for storm protection; nil means
	// always healthy.
	Fleet func() throttle.Fleet
	// Due re-checks a key just before a slot is taken for it: false drops
	// it (e.g. the member recovered while the key waited).
	Due func(ctx context.Context, k Key) (bool, error)
	// Act does the work once the key's slot has come.
	Act func(ctx context.Context, k Key) error
	// Mark tells a waiting key that it is throttled (true, with why), and
	// that it no longer is (false); optional.
	Mark func(ctx context.Context, k Key, throttled bool, why string) error
	// Now and Sleep are the clock; time.Now and a context-aware sleep when nil.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) bool

	mu      sync.Mutex
	order   []Key
	pending map[Key]bool
	marked  map[Key]bool
	// serving is the key being served; again is set when it is asked for
	// meanwhile, so that it is served once more (its action may have read
	// the object before what the new request is about).
	serving *Key
	again   bool
	wake    chan struct{}
}

var _ manager.Runnable = &Queue{}

// stoppedPoll is how often a stopped queue looks whether the storm is over.
const stoppedPoll = time.Second

// retryAfter is how soon a key whose check or action failed is tried again.
const retryAfter = time.Second

func (q *Queue) init() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending, q.marked = map[Key]bool{}, map[Key]bool{}
		q.wake = make(chan struct{}, 1)
	}
	if q.Now == nil {
		q.Now = time.Now
	}
	if q.Sleep == nil {
		q.Sleep = sleep
	}
}

// Add asks for k; a key already waiting keeps its place.
func (q *Queue) Add(k Key) {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending[k] {
		if q.serving != nil && *q.serving == k {
			q.again = true
		}
		return
	}
	q.pending[k] = true
	q.order = append(q.order, k)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len is the number of keys waiting.
func (q *Queue) Len() int {
	q.init()
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order)
}

// Start serves the queue until ctx ends.
func (q *Queue) Start(ctx context.Context) error {
	q.init()
	log := q.logger(ctx)
	ctx = ctrl.IntoContext(ctx, log)
	for ctx.Err() == nil {
		k, ok := q.next(ctx)
		if !ok {
			return nil
		}
		q.serve(ctx, log, k)
	}
	// Keys still waiting stay queued: serve returns at once on an ended
	// context, so looping on them would spin and never let the manager stop.
	return nil
}

func (q *Queue) logger(ctx context.Context) logr.Logger {
	return ctrl.FromContext(ctx).WithName(q.Name)
}

// NeedLeaderElection: only the elected manager evicts.
func (q *Queue) NeedLeaderElection() bool { return true }

// next blocks until a key is waiting, and returns the first (still pending,
// so that Add does not queue it twice while it is served).
func (q *Queue) next(ctx context.Context) (Key, bool) {
	for {
		q.mu.Lock()
		if len(q.order) > 0 {
			k := q.order[0]
			q.serving, q.again = &k, false
			q.mu.Unlock()
			return k, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return Key{}, false
		case <-q.wake:
		}
	}
}

// done takes the head key off the queue, or puts it at the back when it was
// asked for again while it was served.
func (q *Queue) done(k Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) > 0 && q.order[0] == k {
		q.order = q.order[1:]
	}
	if q.again {
		q.order = append(q.order, k)
	} else {
		delete(q.pending, k)
	}
	q.serving, q.again = nil, false
}

// requeue moves the head key to the back.
func (q *Queue) requeue(k Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) > 0 && q.order[0] == k {
		q.order = append(q.order[1:], k)
	}
	q.serving, q.again = nil, false
}

// serve waits for k's slot and acts, or drops k when it is no longer due.
func (q *Queue) serve(ctx context.Context, log logr.Logger, k Key) {
	for ctx.Err() == nil {
		due, err := q.Due(ctx, k)
		if err != nil {
			log.Error(err, "Cannot tell whether an action is still due; retrying", "key", k.String())
			q.requeue(k)
			q.Sleep(ctx, retryAfter)
			return
		}
		if !due {
			q.unmark(ctx, log, k, "no longer due")
			q.done(k)
			return
		}
		fleet := throttle.Unpaced
		if q.Fleet != nil {
			fleet = q.Fleet()
		}
		cfg, now := q.Throttle.Config(), q.Now()
		mode := cfg.ModeAt(fleet, now)
		q.syncMarks(ctx, log, mode, cfg.DescribeAt(fleet, now))
		wait, _, ok := q.Throttle.Reserve(now, fleet)
		if !ok {
			if !q.Sleep(ctx, stoppedPoll) {
				return
			}
			continue
		}
		if wait > 0 && !q.Sleep(ctx, wait) {
			return
		}
		if err := q.Act(ctx, k); err != nil {
			log.Error(err, "Action failed; retrying", "key", k.String())
			q.requeue(k)
			q.Sleep(ctx, retryAfter)
			return
		}
		q.unmark(ctx, log, k, "done")
		q.done(k)
		return
	}
}

// syncMarks marks every waiting key when evictions are slowed or stopped,
// and unmarks them when they go at the normal rate again.
func (q *Queue) syncMarks(ctx context.Context, log logr.Logger, mode throttle.Mode, why string) {
	if q.Mark == nil {
		return
	}
	q.mu.Lock()
	var change []Key
	for _, k := range q.order {
		if q.marked[k] != (mode != throttle.Normal) {
			change = append(change, k)
		}
	}
	q.mu.Unlock()
	for _, k := range change {
		if err := q.Mark(ctx, k, mode != throttle.Normal, why); err != nil {
			log.V(1).Info("Could not mark a waiting key", "key", k.String(), "error", err.Error())
			continue
		}
		q.mu.Lock()
		q.marked[k] = mode != throttle.Normal
		q.mu.Unlock()
	}
}

func (q *Queue) unmark(ctx context.Context, log logr.Logger, k Key, why string) {
	q.mu.Lock()
	marked := q.marked[k]
	delete(q.marked, k)
	q.mu.Unlock()
	if marked && q.Mark != nil {
		if err := q.Mark(ctx, k, false, why); err != nil {
			log.V(1).Info("Could not unmark a key", "key", k.String(), "error", err.Error())
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
