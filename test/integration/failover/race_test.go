package failover_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestSchedulingEvictionAndFailbackRacingLoseNoUpdate: the scheduler, the
// taint manager, graceful eviction and failback all act on the same
// bindings while members go down and come back faster than any of them
// settles. However their writes interleave, none is lost: at the end
// every binding's placement is the one its last decision wrote (the
// Scheduled condition names it and covers the binding's generation),
// no eviction task is left, and every replica is placed.
func TestSchedulingEvictionAndFailbackRacingLoseNoUpdate(t *testing.T) {
	const ns, bindings, rounds = "race", 12, 8
	startManager(t, settings{grace: 500 * time.Millisecond, rate: 50, gracefulEvict: 2 * time.Second})
	members := []string{"race-a", "race-b", "race-c", "race-d"}
	for _, m := range members {
		newMember(t, m)
	}
	weights := map[string]int64{"race-a": 1, "race-b": 1, "race-c": 1, "race-d": 1}
	names := make([]string, bindings)
	for i := range names {
		names[i] = fmt.Sprintf("web-%02d", i)
		newBinding(t, ns, names[i], bindingOpts{replicas: 8, members: members, weights: weights, failback: true})
	}
	const everywhere = "race-a:2 race-b:2 race-c:2 race-d:2"
	for _, name := range names {
		waitPlacement(t, ns, name, everywhere, waitTimeout)
	}

	// Each round takes one member down and brings the previous one back,
	// without waiting for anything to settle; bindings are reported
	// healthy in between so that graceful eviction and failback act too.
	for round := range rounds {
		down := members[round%len(members)]
		setCAPI(t, down, capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
		if round > 0 {
			setCAPI(t, members[(round-1)%len(members)], capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
		}
		time.Sleep(700 * time.Millisecond)
		for _, name := range names[:bindings/2] {
			reportHealthy(t, ns, name)
		}
		time.Sleep(300 * time.Millisecond)
	}
	setCAPI(t, members[(rounds-1)%len(members)], capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)

	for _, m := range members {
		waitUntainted(t, m)
	}
	for _, name := range names {
		eventually(t, time.Minute, "binding "+name+" settled, placed in full, its last decision in force", func() error {
			reportHealthy(t, ns, name)
			b := getBinding(t, ns, name)
			got := placement(b)
			if len(b.Spec.GracefulEvictionTasks) > 0 {
				return fmt.Errorf("placement %q, eviction tasks %+v", got, b.Spec.GracefulEvictionTasks)
			}
			var sum int32
			for _, c := range b.Spec.Clusters {
				sum += c.Replicas
			}
			if sum != b.Spec.Replicas {
				return fmt.Errorf("placement %q holds %d of %d replicas", got, sum, b.Spec.Replicas)
			}
			c := conditions.Get(b, workv1alpha1.ConditionScheduled)
			if c == nil || c.Status != metav1.ConditionTrue || b.Status.SchedulerObservedGeneration != b.Generation {
				return fmt.Errorf("Scheduled %+v, observed generation %d of %d", c, b.Status.SchedulerObservedGeneration, b.Generation)
			}
			// The condition names the placement the last decision wrote: a
			// write that moved spec.clusters behind the scheduler's back, or
			// a stale decision written over a newer one, shows here.
			if want := "placed on " + strings.ReplaceAll(got, " ", ", "); c.Message != want {
				return fmt.Errorf("the last decision says %q, the binding holds %q", c.Message, got)
			}
			return nil
		})
	}
	// Failback returned every binding evicted under its policy: what is
	// not on every member was moved by a rebalance while a member was
	// NoSchedule (not an eviction), which Karmada does not undo either.
	back := 0
	for _, name := range names {
		if placement(getBinding(t, ns, name)) == everywhere {
			back++
		}
	}
	t.Logf("MEASURE %d rounds of one member down and the previous back, %d bindings: %d of them back on every member", rounds, bindings, back)
}

// waitUntainted waits until member carries no taint.
func waitUntainted(t *testing.T, member string) {
	t.Helper()
	eventually(t, 30*time.Second, "member "+member+" untainted", func() error {
		if taints := getMember(t, member).Spec.Taints; len(taints) > 0 {
			return fmt.Errorf("taints %+v", taints)
		}
		return nil
	})
}
