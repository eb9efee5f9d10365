package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// syncModeGate tells whether the agent's member is in Pull mode, reading its
// MemberCluster at most once per ttl. While the member is in Push mode the
// hub applies its Works and the agent leaves them alone (docs/agent.md:
// switching modes).
type syncModeGate struct {
	hub    client.Reader
	member string
	ttl    time.Duration
	clock  clock.PassiveClock

	mu     sync.Mutex
	mode   clusterv1alpha1.SyncMode
	readAt time.Time
}

// pull reports whether the member is in Pull mode. When the hub cannot be
// read, the last known mode holds: an outage changes nothing in the member.
func (g *syncModeGate) pull(ctx context.Context) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	if g.mode != "" && now.Sub(g.readAt) < g.ttl {
		return g.mode == clusterv1alpha1.Pull, nil
	}
	m := &clusterv1alpha1.MemberCluster{}
	if err := g.hub.Get(ctx, client.ObjectKey{Name: g.member}, m); err != nil {
		if g.mode != "" {
			return g.mode == clusterv1alpha1.Pull, nil
		}
		return false, fmt.Errorf("read the sync mode of MemberCluster %s: %w", g.member, err)
	}
	g.mode, g.readAt = m.Spec.SyncMode, now
	if g.mode == "" {
		g.mode = clusterv1alpha1.Push
	}
	return g.mode == clusterv1alpha1.Pull, nil
}
