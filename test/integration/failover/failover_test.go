package failover_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

const (
	unreachable = clusterv1alpha1.TaintUnreachable
	noSchedule  = corev1.TaintEffectNoSchedule
	noExecute   = corev1.TaintEffectNoExecute
)

func TestAnUnreachableMemberIsTaintedAtOnceThenEvictedAfterTheGracePeriod(t *testing.T) {
	grace := 3 * time.Second
	startManager(t, settings{grace: grace})
	newMember(t, "ur-a")
	newMember(t, "ur-b")
	newBinding(t, "ur", "web", bindingOpts{replicas: 6, members: []string{"ur-a", "ur-b"}, weights: map[string]int64{"ur-a": 2, "ur-b": 1}})
	waitPlacement(t, "ur", "web", "ur-a:4 ur-b:2", waitTimeout)
	rec := recordEvictions(t, "ur")

	down := time.Now()
	setCAPI(t, "ur-b", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
	noSchedAt := waitTaint(t, "ur-b", unreachable, noSchedule, 5*time.Second)
	t.Logf("RemoteConnectionProbe=False → unreachable:NoSchedule seen after %s", time.Since(down).Round(time.Millisecond))
	m := getMember(t, "ur-b")
	if r := conditions.Get(m, clusterv1alpha1.ConditionReachable); r == nil || r.Status != metav1.ConditionFalse || r.Reason != clusterv1alpha1.UnreachableReason {
		t.Errorf("Reachable = %+v, want False/Unreachable", r)
	}
	if m.Annotations[clusterv1alpha1.PolicyTaintsAnnotation] != "cluster.flotilla.io/unreachable:NoSchedule" {
		t.Errorf("policy taints annotation = %q", m.Annotations[clusterv1alpha1.PolicyTaintsAnnotation])
	}
	// NoSchedule keeps the running placement: nothing moves before NoExecute.
	if taintOf(getMember(t, "ur-b"), unreachable, noExecute) == nil {
		if b := getBinding(t, "ur", "web"); placement(b) != "ur-a:4 ur-b:2" || len(b.Spec.GracefulEvictionTasks) > 0 {
			t.Errorf("before NoExecute the placement moved: %q, tasks %+v", placement(b), b.Spec.GracefulEvictionTasks)
		}
	}

	noExecAt := waitTaint(t, "ur-b", unreachable, noExecute, grace+5*time.Second)
	seenNoExec := time.Now()
	// timeAdded has a resolution of one second.
	if d := noExecAt.Sub(noSchedAt); d < grace-time.Second || d > grace+2*time.Second {
		t.Errorf("NoExecute came %s after NoSchedule, want the grace period of %s", d, grace)
	}
	b := waitPlacement(t, "ur", "web", "ur-a:6", 10*time.Second)
	evictedAt := rec.times()
	if len(evictedAt) == 0 {
		// The recorder polls every 20 ms and may not have listed since the
		// eviction when the new placement is seen; the binding's Evicted
		// event has the time too.
		eventually(t, 5*time.Second, "an Evicted event on the binding", func() error {
			for _, ev := range events(t, "ur", "web", workv1alpha1.EvictedEvent) {
				if ev.EventTime.After(down) {
					evictedAt = []time.Time{ev.EventTime.Time}
					return nil
				}
			}
			return fmt.Errorf("none yet; tasks %+v", getBinding(t, "ur", "web").Spec.GracefulEvictionTasks)
		})
	}
	if len(evictedAt) != 1 {
		t.Fatalf("evictions seen: %v", evictedAt)
	}
	t.Logf("MEASURE unreachable: probe False → NoExecute %s (grace %s); NoExecute seen → binding evicted %s; → rescheduled on ur-a:6 %s",
		seenNoExec.Sub(down).Round(time.Millisecond), grace, evictedAt[0].Sub(seenNoExec).Round(time.Millisecond), time.Since(seenNoExec).Round(time.Millisecond))
	task := taskFor(b, "ur-b")
	if task == nil || task.PurgeMode != policyv1alpha1.PurgeModeGracefully || task.Reason != workv1alpha1.EvictionReasonTaintUntolerated ||
		task.Producer != workv1alpha1.EvictionProducerTaintManager || ptr.Deref(task.Replicas, 0) != 2 || task.CreationTimestamp == nil ||
		len(task.ClustersBeforeFailover) != 2 || ptr.Deref(task.GracePeriodSeconds, 0) != 60 {
		t.Errorf("eviction task = %+v", task)
	}
	waitEvent(t, "ur", "web", workv1alpha1.EvictedEvent)

	// The replacement on ur-a becomes Ready: the old copy is released.
	reportHealthy(t, "ur", "web")
	eventually(t, 10*time.Second, "the eviction task removed", func() error {
		if b := getBinding(t, "ur", "web"); len(b.Spec.GracefulEvictionTasks) > 0 {
			return fmt.Errorf("tasks %+v", b.Spec.GracefulEvictionTasks)
		}
		return nil
	})

	// Reachable again: both taints go, and nothing comes back without failback.
	setCAPI(t, "ur-b", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	eventually(t, 10*time.Second, "taints removed", func() error {
		if m := getMember(t, "ur-b"); len(m.Spec.Taints) > 0 || m.Annotations[clusterv1alpha1.PolicyTaintsAnnotation] != "" {
			return fmt.Errorf("taints %v, annotations %v", m.Spec.Taints, m.Annotations)
		}
		return nil
	})
	consistently(t, time.Second, "no failback without the policy asking", func() error {
		if got := placement(getBinding(t, "ur", "web")); got != "ur-a:6" {
			return fmt.Errorf("placement %q", got)
		}
		return nil
	})
}

// evictAll places n bindings of one replica each on two members, taints the
// second NoExecute by hand, and returns the times the bindings were evicted.
func evictAll(t *testing.T, ns string, n int) []time.Time {
	a, b := ns+"-a", ns+"-b"
	newMember(t, a)
	newMember(t, b)
	for i := range n {
		newBinding(t, ns, fmt.Sprintf("w%03d", i), bindingOpts{replicas: 2, members: []string{a, b}})
	}
	for i := range n {
		waitPlacement(t, ns, fmt.Sprintf("w%03d", i), a+":1 "+b+":1", waitTimeout)
	}
	rec := recordEvictions(t, ns)
	taintByHand(t, b, "maintenance.example/down")
	eventually(t, time.Duration(n)*3*time.Second+10*time.Second, fmt.Sprintf("%d bindings evicted", n), func() error {
		if c := rec.count(); c < n {
			return fmt.Errorf("%d evicted", c)
		}
		return nil
	})
	for i := range n {
		waitPlacement(t, ns, fmt.Sprintf("w%03d", i), a+":2", waitTimeout)
	}
	return rec.times()
}

func TestEvictionsGoAtTheConfiguredRate(t *testing.T) {
	const rate = 0.5
	startManager(t, settings{rate: rate})
	times := evictAll(t, "rate", 20)
	got := achievedRate(times)
	t.Logf("MEASURE eviction rate over %d bindings: configured %.2f/s, achieved %.3f/s (first → last %s)", len(times), rate, got, times[len(times)-1].Sub(times[0]).Round(time.Millisecond))
	if got < rate*0.9 || got > rate*1.1 {
		t.Errorf("achieved %.3f/s, want %.2f/s ± 10%%", got, rate)
	}
	for i := 1; i < len(times); i++ {
		// Each eviction waits for its slot: never two within the interval, give
		// or take the observer's watch latency, which on a loaded 2-core
		// machine reaches a few hundred ms (a burst would show a gap near 0).
		if gap := times[i].Sub(times[i-1]); gap < time.Duration(float64(time.Second)/rate)-500*time.Millisecond {
			t.Errorf("evictions %d and %d only %s apart", i-1, i, gap)
		}
	}
}

func TestEvictionRateOverAHundredBindings(t *testing.T) {
	const rate = 5.0
	startManager(t, settings{rate: rate})
	times := evictAll(t, "hundred", 100)
	got := achievedRate(times)
	t.Logf("MEASURE eviction rate over %d bindings: configured %.1f/s, achieved %.3f/s (first → last %s)", len(times), rate, got, times[len(times)-1].Sub(times[0]).Round(time.Millisecond))
	if got < rate*0.9 || got > rate*1.1 {
		t.Errorf("achieved %.3f/s, want %.1f/s ± 10%%", got, rate)
	}
}

// stormFleet makes 4 members, places a binding on the first and the last,
// and makes the first three unreachable.
func stormFleet(t *testing.T, ns string, bindings int) {
	for _, s := range []string{"a", "b", "c", "d"} {
		newMember(t, ns+"-"+s)
	}
	for i := range bindings {
		newBinding(t, ns, fmt.Sprintf("w%d", i), bindingOpts{replicas: 2, members: []string{ns + "-a", ns + "-d"}})
		waitPlacement(t, ns, fmt.Sprintf("w%d", i), ns+"-a:1 "+ns+"-d:1", waitTimeout)
	}
	for _, s := range []string{"a", "b", "c"} {
		setCAPI(t, ns+"-"+s, capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
	}
}

func TestAStormStopsEvictionsAndSaysSo(t *testing.T) {
	grace := 2 * time.Second
	startManager(t, settings{grace: grace, secondaryRate: 0})
	stormFleet(t, "storm", 1)
	waitTaint(t, "storm-a", unreachable, noExecute, grace+5*time.Second)

	eventually(t, 10*time.Second, "EvictionThrottled on the waiting binding", func() error {
		c := conditions.Get(getBinding(t, "storm", "w0"), workv1alpha1.ConditionEvictionThrottled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != workv1alpha1.EvictionThrottledReason {
			return fmt.Errorf("EvictionThrottled = %+v", c)
		}
		t.Logf("condition: %s", c.Message)
		return nil
	})
	consistently(t, 3*time.Second, "no eviction while 3 of 4 members are unhealthy", func() error {
		if b := getBinding(t, "storm", "w0"); len(b.Spec.GracefulEvictionTasks) > 0 {
			return fmt.Errorf("evicted during the storm: %+v", b.Spec.GracefulEvictionTasks)
		}
		return nil
	})
	for _, m := range []string{"storm-a", "storm-b", "storm-c"} {
		ev := events(t, "default", m, clusterv1alpha1.EvictionThrottledReason)
		if len(ev) == 0 {
			t.Errorf("no %s event on %s", clusterv1alpha1.EvictionThrottledReason, m)
		} else if m == "storm-a" {
			t.Logf("event on %s: %s", m, ev[0].Note)
		}
	}

	// Two members come back: 1 of 4 is unhealthy, evictions resume.
	setCAPI(t, "storm-b", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	setCAPI(t, "storm-c", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	b := waitPlacement(t, "storm", "w0", "storm-d:2", 15*time.Second)
	if taskFor(b, "storm-a") == nil {
		t.Errorf("no eviction task for storm-a: %+v", b.Spec.GracefulEvictionTasks)
	}
	eventually(t, 5*time.Second, "EvictionThrottled False", func() error {
		if c := conditions.Get(getBinding(t, "storm", "w0"), workv1alpha1.ConditionEvictionThrottled); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("EvictionThrottled = %+v", c)
		}
		return nil
	})
	waitEvent(t, "default", "storm-a", clusterv1alpha1.EvictionResumedReason)
}

func TestAStormSlowsEvictionsToTheSecondaryRate(t *testing.T) {
	grace := 2 * time.Second
	const secondary = 0.25
	startManager(t, settings{grace: grace, rate: 20, secondaryRate: secondary})
	rec := recordEvictions(t, "slow")
	stormFleet(t, "slow", 3)
	eventually(t, 30*time.Second, "3 evictions", func() error {
		if c := rec.count(); c < 3 {
			return fmt.Errorf("%d evicted", c)
		}
		return nil
	})
	times := rec.times()
	got := achievedRate(times)
	t.Logf("MEASURE storm: configured rate 20/s, secondary %.2f/s; achieved %.3f/s over 3 bindings", secondary, got)
	if got > secondary*1.15 {
		t.Errorf("achieved %.3f/s during the storm, want at most %.2f/s", got, secondary)
	}
}

func TestTolerationSecondsDelayTheEviction(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "tol-a")
	newMember(t, "tol-b")
	newBinding(t, "tol", "web", bindingOpts{replicas: 2, members: []string{"tol-a", "tol-b"}, tolerations: []corev1.Toleration{
		{Key: "maintenance.example/down", Operator: corev1.TolerationOpExists, Effect: noExecute, TolerationSeconds: ptr.To[int64](5)}}})
	waitPlacement(t, "tol", "web", "tol-a:1 tol-b:1", waitTimeout)
	rec := recordEvictions(t, "tol")

	taintByHand(t, "tol-b", "maintenance.example/down")
	added := taintOf(getMember(t, "tol-b"), "maintenance.example/down", noExecute).TimeAdded.Time
	due := added.Add(5 * time.Second)
	consistently(t, time.Until(due.Add(-200*time.Millisecond)), "not evicted within the toleration", func() error {
		if rec.count() > 0 {
			return fmt.Errorf("evicted before the toleration ran out")
		}
		return nil
	})
	waitPlacement(t, "tol", "web", "tol-a:2", 5*time.Second)
	// The recorder polls every 20 ms and can miss a task that came and went
	// between two polls; the binding's Evicted event has the time too.
	var at time.Time
	if times := rec.times(); len(times) > 0 {
		at = times[0]
	} else {
		eventually(t, 5*time.Second, "an Evicted event on the binding", func() error {
			ev := events(t, "tol", "web", workv1alpha1.EvictedEvent)
			if len(ev) == 0 {
				return fmt.Errorf("none yet")
			}
			at = ev[0].EventTime.Time
			return nil
		})
	}
	t.Logf("MEASURE toleration of 5s: evicted %s after the taint's timeAdded", at.Sub(added).Round(time.Millisecond))
	if d := at.Sub(added); d < 5*time.Second || d > 6500*time.Millisecond {
		t.Errorf("evicted %s after timeAdded, want just after 5s", d)
	}
}

// Every member unreachable at once (the hub cut off, not the fleet down):
// nothing is evicted whatever the rates, no binding loses a member, and
// once the members answer again every placement is as before.
func TestFullDisruptionEvictsNothingAndPlacementsSurvive(t *testing.T) {
	grace := 2 * time.Second
	startManager(t, settings{grace: grace, rate: 20, secondaryRate: 5})
	members := []string{"fd-a", "fd-b", "fd-c"}
	for _, m := range members {
		newMember(t, m)
	}
	for i := range 3 {
		newBinding(t, "fd", fmt.Sprintf("w%d", i), bindingOpts{replicas: 3, members: members})
		waitPlacement(t, "fd", fmt.Sprintf("w%d", i), "fd-a:1 fd-b:1 fd-c:1", waitTimeout)
	}
	for _, m := range members {
		setCAPI(t, m, capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
	}
	for _, m := range members {
		waitTaint(t, m, unreachable, noExecute, grace+10*time.Second)
	}
	eventually(t, 10*time.Second, "EvictionThrottled saying full disruption", func() error {
		c := conditions.Get(getBinding(t, "fd", "w0"), workv1alpha1.ConditionEvictionThrottled)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "full disruption") {
			return fmt.Errorf("EvictionThrottled = %+v", c)
		}
		t.Logf("condition: %s", c.Message)
		return nil
	})
	consistently(t, 5*time.Second, "no eviction, no member lost, while every member is unhealthy", func() error {
		for i := range 3 {
			b := getBinding(t, "fd", fmt.Sprintf("w%d", i))
			if len(b.Spec.GracefulEvictionTasks) > 0 || placement(b) != "fd-a:1 fd-b:1 fd-c:1" {
				return fmt.Errorf("w%d: placement %s, tasks %+v", i, placement(b), b.Spec.GracefulEvictionTasks)
			}
		}
		return nil
	})
	for _, m := range members {
		setCAPI(t, m, capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	}
	for _, m := range members {
		eventually(t, 15*time.Second, "no unreachable taint on "+m, func() error {
			if taint := taintOf(getMember(t, m), unreachable, noExecute); taint != nil {
				return fmt.Errorf("still tainted %+v", taint)
			}
			return nil
		})
	}
	// Past the settle period (the failover grace) nothing was due any more.
	time.Sleep(2 * grace)
	for i := range 3 {
		b := getBinding(t, "fd", fmt.Sprintf("w%d", i))
		if len(b.Spec.GracefulEvictionTasks) > 0 || placement(b) != "fd-a:1 fd-b:1 fd-c:1" {
			t.Errorf("w%d after recovery: placement %s, tasks %+v", i, placement(b), b.Spec.GracefulEvictionTasks)
		}
	}
}
