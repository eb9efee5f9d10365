package failover_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/metrics"
)

// reportHealth writes the binding's aggregated status as the status
// controller would: each member's health, its status, and since when.
func reportHealth(t *testing.T, namespace, name string, health map[string]workv1alpha1.ResourceHealth, status map[string]string, since time.Time) {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	update(t, b, func() {
		b.Status.AggregatedStatus = nil
		for _, c := range b.Spec.Clusters {
			item := workv1alpha1.AggregatedStatusItem{ClusterName: c.Name, Applied: true, Health: health[c.Name],
				HealthTransitionTime: ptr.To(metav1.NewTime(since))}
			if s, ok := status[c.Name]; ok {
				item.Status = &runtime.RawExtension{Raw: []byte(s)}
			}
			b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, item)
		}
	}, true)
}

// TestAWorkloadUnhealthyOnAMemberPastTolerationSecondsMovesElsewhere:
// application failover. A binding's workload turns Unhealthy on one member
// (its pods never become ready there) while the member itself is healthy:
// nothing moves during tolerationSeconds; then that member's share is
// evicted with the policy's purge mode and grace period, through the
// eviction queue, and placed on the other member, its replacement labelled
// with the statePreservation values read from the failed copy.
func TestAWorkloadUnhealthyOnAMemberPastTolerationSecondsMovesElsewhere(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "af-a")
	newMember(t, "af-b")
	b := newBinding(t, "af", "web", bindingOpts{replicas: 6, members: []string{"af-a", "af-b"}, weights: map[string]int64{"af-a": 2, "af-b": 1}})
	update(t, b, func() {
		b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](4)},
			PurgeMode:          policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](90),
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: "failover.example.io/ready", JSONPath: "{ .readyReplicas }"},
			}},
		}}
	}, false)
	waitPlacement(t, "af", "web", "af-a:4 af-b:2", waitTimeout)
	counted := testutil.ToFloat64(metrics.Evictions.WithLabelValues(workv1alpha1.EvictionReasonApplicationFailure, string(policyv1alpha1.PurgeModeGracefully)))

	turned := time.Now()
	reportHealth(t, "af", "web", map[string]workv1alpha1.ResourceHealth{"af-a": workv1alpha1.ResourceHealthy, "af-b": workv1alpha1.ResourceUnhealthy},
		map[string]string{"af-a": `{"readyReplicas":4}`, "af-b": `{"readyReplicas":0}`}, turned)
	consistently(t, 3*time.Second, "af-b kept during tolerationSeconds", func() error {
		if got := placement(getBinding(t, "af", "web")); got != "af-a:4 af-b:2" {
			return fmt.Errorf("placement %q before tolerationSeconds passed", got)
		}
		return nil
	})
	moved := waitPlacement(t, "af", "web", "af-a:6", 10*time.Second)
	t.Logf("MEASURE application failover: Unhealthy → evicted %s (tolerationSeconds 4 s)", time.Since(turned).Round(time.Millisecond))
	task := taskFor(moved, "af-b")
	if task == nil {
		t.Fatalf("no eviction task for af-b: %+v", moved.Spec.GracefulEvictionTasks)
	}
	if task.Reason != workv1alpha1.EvictionReasonApplicationFailure || task.Producer != workv1alpha1.EvictionProducerApplicationFailover ||
		task.PurgeMode != policyv1alpha1.PurgeModeGracefully || *task.GracePeriodSeconds != 90 ||
		task.PreservedLabelState["failover.example.io/ready"] != "0" || !strings.Contains(task.Message, "Unhealthy on member af-b") {
		t.Errorf("task = %+v", task)
	}
	if n := testutil.ToFloat64(metrics.Evictions.WithLabelValues(workv1alpha1.EvictionReasonApplicationFailure, string(policyv1alpha1.PurgeModeGracefully))); n != counted+1 {
		t.Errorf("flotilla_evictions_total{reason=ApplicationFailure,purge_mode=Gracefully} went from %v to %v, want one more", counted, n)
	}
	waitEvent(t, "af", "web", workv1alpha1.EvictedEvent)
	if evs := events(t, "af", "web", workv1alpha1.EvictedEvent); len(evs) == 0 || !strings.Contains(evs[0].Note, "ApplicationFailure") {
		t.Errorf("Evicted events %+v, want one saying ApplicationFailure", evs)
	}

	// The evicted member is not chosen again while its task is held, though
	// the member itself is healthy.
	consistently(t, 2*time.Second, "af-b not placed again while its task is held", func() error {
		if got := placement(getBinding(t, "af", "web")); got != "af-a:6" {
			return fmt.Errorf("placement %q", got)
		}
		return nil
	})
}

// TestUnknownHealthAndPoliciesWithoutApplicationFailoverNeverMove: only
// Unhealthy counts, and only under failover.application.
func TestUnknownHealthAndPoliciesWithoutApplicationFailoverNeverMove(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "an-a")
	newMember(t, "an-b")
	with := newBinding(t, "an", "unknown", bindingOpts{replicas: 2, members: []string{"an-a", "an-b"}})
	update(t, with, func() {
		with.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](0)}}}
	}, false)
	newBinding(t, "an", "plain", bindingOpts{replicas: 2, members: []string{"an-a", "an-b"}})
	waitPlacement(t, "an", "unknown", "an-a:1 an-b:1", waitTimeout)
	waitPlacement(t, "an", "plain", "an-a:1 an-b:1", waitTimeout)
	long := time.Now().Add(-time.Hour)
	reportHealth(t, "an", "unknown", map[string]workv1alpha1.ResourceHealth{"an-a": workv1alpha1.ResourceHealthy, "an-b": workv1alpha1.ResourceUnknown}, nil, long)
	reportHealth(t, "an", "plain", map[string]workv1alpha1.ResourceHealth{"an-a": workv1alpha1.ResourceHealthy, "an-b": workv1alpha1.ResourceUnhealthy}, nil, long)
	consistently(t, 3*time.Second, "both bindings where they are", func() error {
		for _, name := range []string{"unknown", "plain"} {
			if got := placement(getBinding(t, "an", name)); got != "an-a:1 an-b:1" {
				return fmt.Errorf("%s moved to %q", name, got)
			}
		}
		return nil
	})
}

// TestAnApplicationFailoverWaitsForTheStateItMustPreserve: as Karmada's, an
// eviction whose statePreservation rule cannot be read from the failed
// copy's status (not collected yet, or without the field) is held, says
// why in an event, and is tried again: it goes, labels and all, once the
// status has the field, with no other change to the binding to wake it.
func TestAnApplicationFailoverWaitsForTheStateItMustPreserve(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "aw-a")
	newMember(t, "aw-b")
	b := newBinding(t, "aw", "web", bindingOpts{replicas: 4, members: []string{"aw-a", "aw-b"}})
	update(t, b, func() {
		b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](1)},
			PurgeMode:          policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](90),
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: "failover.example.io/ready", JSONPath: "{ .readyReplicas }"},
			}},
		}}
	}, false)
	waitPlacement(t, "aw", "web", "aw-a:2 aw-b:2", waitTimeout)

	// Unhealthy on aw-b long past tolerationSeconds, but its reflected
	// status leaves readyReplicas out (Kubernetes omits a zero counter).
	long := time.Now().Add(-time.Hour)
	health := map[string]workv1alpha1.ResourceHealth{"aw-a": workv1alpha1.ResourceHealthy, "aw-b": workv1alpha1.ResourceUnhealthy}
	reportHealth(t, "aw", "web", health, map[string]string{"aw-a": `{"readyReplicas":2}`, "aw-b": `{"replicas":2}`}, long)
	waitEvent(t, "aw", "web", workv1alpha1.StatePreservationFailedEvent)
	if evs := events(t, "aw", "web", workv1alpha1.StatePreservationFailedEvent); !strings.Contains(evs[0].Note, "member aw-b waits") || !strings.Contains(evs[0].Note, "readyReplicas") {
		t.Errorf("StatePreservationFailed event %q, want it to name the member and the field", evs[0].Note)
	}
	consistently(t, 7*time.Second, "aw-b kept while its state cannot be read (past one retry)", func() error {
		got := getBinding(t, "aw", "web")
		if p := placement(got); p != "aw-a:2 aw-b:2" || len(got.Spec.GracefulEvictionTasks) != 0 {
			return fmt.Errorf("placement %q, tasks %+v: evicted without the preserved state", p, got.Spec.GracefulEvictionTasks)
		}
		return nil
	})

	// The field appears; health is unchanged, so only the retry sees it.
	reportHealth(t, "aw", "web", health, map[string]string{"aw-a": `{"readyReplicas":2}`, "aw-b": `{"replicas":2,"readyReplicas":0}`}, long)
	moved := waitPlacement(t, "aw", "web", "aw-a:4", 15*time.Second)
	task := taskFor(moved, "aw-b")
	if task == nil || task.PreservedLabelState["failover.example.io/ready"] != "0" {
		t.Fatalf("eviction task for aw-b %+v, want preservedLabelState failover.example.io/ready=0", task)
	}
}
