package scheduling

import (
	"context"
	"sync"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// snapshots compiles the fleet into a scheduler.Snapshot and reuses it until
// a MemberCluster changes, so that a thousand decisions in a row neither
// recompile nor even list a thousand members: the MemberCluster informer
// marks the snapshot stale on every add, update and delete (handler), and
// only a stale snapshot is rebuilt from the cache.
type snapshots struct {
	reader client.Reader
	sched  *scheduler.Scheduler

	// fresh: no member changed since current was built.
	fresh   atomic.Bool
	mu      sync.Mutex
	current *scheduler.Snapshot
}

// invalidate marks the snapshot stale: a member was added, changed or
// deleted.
func (s *snapshots) invalidate() { s.fresh.Store(false) }

// handler invalidates the snapshot on every change the informer sees. The
// informer updates its store before it notifies, so a rebuild that follows
// lists the change.
func (s *snapshots) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.invalidate() },
		UpdateFunc: func(any, any) { s.invalidate() },
		DeleteFunc: func(any) { s.invalidate() },
	}
}

func (s *snapshots) get(ctx context.Context) (*scheduler.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != nil && s.fresh.Load() {
		return s.current, nil
	}
	// Fresh from here: a change while the list below runs marks it stale
	// again, and the next decision rebuilds.
	s.fresh.Store(true)
	list := &clusterv1alpha1.MemberClusterList{}
	// The cache's own objects, not copies: copying a 10,000-member fleet
	// costs ~100 ms. Nothing here or in the snapshot writes to them.
	if err := s.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		s.fresh.Store(false)
		return nil, err
	}
	snap, err := scheduler.NewSnapshot(list.Items)
	if err != nil {
		s.fresh.Store(false)
		return nil, err
	}
	s.current = snap
	// Assumed capacity that a member's capacity model now reflects is released.
	s.sched.Ledger().Prune(snap.Names(), snap.Models())
	return snap, nil
}
