package binding

import (
	"context"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// snapshots compiles the fleet into a scheduler.Snapshot and reuses it until
// a MemberCluster changes, so that a thousand decisions in a row do not each
// recompile a thousand members. What tells it of a change is the member
// informer's events (changes, below), not a look at the fleet: even a
// shallow list of a 10,000-member cache, to fingerprint it, cost more than
// the decision it served.
type snapshots struct {
	reader client.Reader
	sched  *scheduler.Scheduler

	// epoch counts member events; built is the epoch the current
	// snapshot was listed at.
	epoch atomic.Uint64

	mu      sync.Mutex
	built   uint64
	current *scheduler.Snapshot
}

// memberChanged records that a MemberCluster was added, updated or deleted
// in the cache. The informer updates its store before it hands out the
// event, so a list made after this call sees the change.
func (s *snapshots) memberChanged() { s.epoch.Add(1) }

// changes is the event handler that tells the snapshots of member events;
// it enqueues nothing.
func (s *snapshots) changes() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			s.memberChanged()
		},
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			s.memberChanged()
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			s.memberChanged()
		},
		GenericFunc: func(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			s.memberChanged()
		},
	}
}

func (s *snapshots) get(ctx context.Context) (*scheduler.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read before listing: an event that lands while the list is made
	// leaves the epoch ahead of built, and the next decision lists again.
	epoch := s.epoch.Load()
	if s.current != nil && epoch == s.built {
		return s.current, nil
	}
	list := &clusterv1alpha1.MemberClusterList{}
	// The cache's own objects, not copies: copying a 10,000-member fleet
	// costs ~100 ms. Nothing here or in the snapshot writes to them.
	if err := s.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	snap, err := scheduler.NewSnapshot(list.Items)
	if err != nil {
		return nil, err
	}
	s.current, s.built = snap, epoch
	// Assumed capacity that a member's capacity model now reflects is released.
	s.sched.Ledger().Prune(snap.Names(), snap.Models())
	return snap, nil
}
