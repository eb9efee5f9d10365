package failover_test

import (
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

const testFinalizer = "test.flotilla.io/hold"

func tasksOf(t *testing.T, ns, name string) []workv1alpha1.GracefulEvictionTask {
	return getBinding(t, ns, name).Spec.GracefulEvictionTasks
}

func TestGracefullyKeepsTheOldCopyUntilTheReplacementIsReady(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "gr-a")
	newMember(t, "gr-b")
	newBinding(t, "gr", "web", bindingOpts{replicas: 6, members: []string{"gr-a", "gr-b"}, weights: map[string]int64{"gr-a": 2, "gr-b": 1}})
	waitPlacement(t, "gr", "web", "gr-a:4 gr-b:2", waitTimeout)

	taintByHand(t, "gr-b", "maintenance.example/down")
	b := waitPlacement(t, "gr", "web", "gr-a:6", 10*time.Second)
	if task := taskFor(b, "gr-b"); task == nil || task.PurgeMode != policyv1alpha1.PurgeModeGracefully {
		t.Fatalf("task = %+v, want a Gracefully task for gr-b", task)
	}
	consistently(t, 2*time.Second, "the task stays while the replacement is not Ready", func() error {
		if len(tasksOf(t, "gr", "web")) != 1 {
			return fmt.Errorf("task removed before the replacement was Ready")
		}
		return nil
	})
	ready := time.Now()
	reportHealthy(t, "gr", "web")
	eventually(t, 10*time.Second, "the task removed", func() error {
		if tasks := tasksOf(t, "gr", "web"); len(tasks) > 0 {
			return fmt.Errorf("tasks %+v", tasks)
		}
		return nil
	})
	t.Logf("MEASURE Gracefully: replacement Ready → task removed %s", time.Since(ready).Round(time.Millisecond))
	waitEvent(t, "gr", "web", workv1alpha1.PurgedEvent)
}

// A new generation of the binding that changes nothing the scheduler reads
// (here the template's resourceVersion, recorded on every template change)
// is observed by the scheduler without a decision, so that the purge, which
// waits for the scheduler to have seen the binding's generation, goes as
// soon as the replacement is Ready rather than at the end of the grace
// period (a minute here).
func TestATemplateChangeDuringAnEvictionDoesNotHoldThePurge(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "tc-a")
	newMember(t, "tc-b")
	newBinding(t, "tc", "web", bindingOpts{replicas: 4, members: []string{"tc-a", "tc-b"}})
	waitPlacement(t, "tc", "web", "tc-a:2 tc-b:2", waitTimeout)

	taintByHand(t, "tc-b", "maintenance.example/down")
	decided := waitPlacement(t, "tc", "web", "tc-a:4", 10*time.Second)
	if taskFor(decided, "tc-b") == nil {
		t.Fatalf("no eviction task for tc-b: %+v", decided.Spec.GracefulEvictionTasks)
	}
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "tc", Name: "web"}}
	update(t, b, func() { b.Spec.Resource.ResourceVersion = "template-changed" }, false)
	eventually(t, 10*time.Second, "the new generation observed by the scheduler", func() error {
		got := getBinding(t, "tc", "web")
		if got.Status.SchedulerObservedGeneration != got.Generation {
			return fmt.Errorf("observed generation %d of %d", got.Status.SchedulerObservedGeneration, got.Generation)
		}
		return nil
	})
	after := getBinding(t, "tc", "web")
	if placement(after) != "tc-a:4" || !after.Status.LastScheduledTime.Equal(decided.Status.LastScheduledTime) {
		t.Errorf("observing a generation changed the decision: placement %q, lastScheduledTime %v (was %v)",
			placement(after), after.Status.LastScheduledTime, decided.Status.LastScheduledTime)
	}
	reportHealthy(t, "tc", "web")
	eventually(t, 10*time.Second, "the task removed once the replacement is Ready", func() error {
		if tasks := tasksOf(t, "tc", "web"); len(tasks) > 0 {
			return fmt.Errorf("tasks %+v", tasks)
		}
		return nil
	})
}

func TestDirectlyRemovesTheOldCopyBeforeTheReplacementIsPlaced(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "dr-a")
	newMember(t, "dr-b")
	newBinding(t, "dr", "web", bindingOpts{replicas: 6, members: []string{"dr-a", "dr-b"}, weights: map[string]int64{"dr-a": 2, "dr-b": 1}, purgeMode: policyv1alpha1.PurgeModeDirectly})
	b := waitPlacement(t, "dr", "web", "dr-a:4 dr-b:2", waitTimeout)

	// dr-b's Work, held by a finalizer as the execution controller holds it
	// until the objects are removed from the member.
	ensureNamespace(t, clusterv1alpha1.ExecutionNamespace("dr-b"))
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace("dr-b"), Name: binding.WorkName(binding.KindResourceBinding, "dr", "web"),
		Finalizers: []string{testFinalizer},
		Labels:     map[string]string{workv1alpha1.BindingPermanentIDLabel: string(b.UID), clusterv1alpha1.MemberLabel: "dr-b"},
		Annotations: map[string]string{workv1alpha1.BindingKindAnnotation: binding.KindResourceBinding,
			workv1alpha1.BindingNamespaceAnnotation: "dr", workv1alpha1.BindingNameAnnotation: "web"},
	}}
	if err := hub.Client.Create(ctx(), work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { releaseFinalizer(t, work) })

	taintByHand(t, "dr-b", "maintenance.example/down")
	eventually(t, 10*time.Second, "dr-b's Work deleted first", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(work), work); err != nil {
			return err
		}
		if work.DeletionTimestamp.IsZero() {
			return fmt.Errorf("Work not being deleted")
		}
		return nil
	})
	consistently(t, 2*time.Second, "no replacement while the old copy is there", func() error {
		b := getBinding(t, "dr", "web")
		if got := placement(b); got != "dr-a:4" || taskFor(b, "dr-b") == nil {
			return fmt.Errorf("placement %q, tasks %+v", got, b.Spec.GracefulEvictionTasks)
		}
		return nil
	})
	gone := time.Now()
	releaseFinalizer(t, work)
	b = waitPlacement(t, "dr", "web", "dr-a:6", 10*time.Second)
	if len(b.Spec.GracefulEvictionTasks) > 0 {
		t.Errorf("tasks left: %+v", b.Spec.GracefulEvictionTasks)
	}
	t.Logf("MEASURE Directly: old Work gone → replacement placed %s", time.Since(gone).Round(time.Millisecond))
}

func TestNeverLeavesTheOldCopyForAnOperator(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "nv-a")
	newMember(t, "nv-b")
	newBinding(t, "nv", "web", bindingOpts{replicas: 6, members: []string{"nv-a", "nv-b"}, weights: map[string]int64{"nv-a": 2, "nv-b": 1}, purgeMode: policyv1alpha1.Never})
	waitPlacement(t, "nv", "web", "nv-a:4 nv-b:2", waitTimeout)

	taintByHand(t, "nv-b", "maintenance.example/down")
	b := waitPlacement(t, "nv", "web", "nv-a:6", 10*time.Second)
	if task := taskFor(b, "nv-b"); task == nil || task.PurgeMode != policyv1alpha1.Never || !ptr.Deref(task.SuppressDeletion, false) {
		t.Fatalf("task = %+v, want Never with suppressDeletion", task)
	}
	reportHealthy(t, "nv", "web")
	consistently(t, 2*time.Second, "the task stays even with the replacement Ready", func() error {
		if len(tasksOf(t, "nv", "web")) != 1 {
			return fmt.Errorf("task removed")
		}
		return nil
	})
	// The operator releases it.
	update(t, b, func() { b.Spec.GracefulEvictionTasks[0].SuppressDeletion = ptr.To(false) }, false)
	eventually(t, 10*time.Second, "the released task removed", func() error {
		if tasks := tasksOf(t, "nv", "web"); len(tasks) > 0 {
			return fmt.Errorf("tasks %+v", tasks)
		}
		return nil
	})
}

func releaseFinalizer(t *testing.T, obj client.Object) {
	t.Helper()
	err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	update(t, obj, func() { controllerutil.RemoveFinalizer(obj, testFinalizer) }, false)
}

func TestFailbackReturnsReplicasWhenTheMemberRecovers(t *testing.T) {
	grace := 2 * time.Second
	startManager(t, settings{grace: grace})
	newMember(t, "fb-a")
	newMember(t, "fb-b")
	newBinding(t, "fb", "web", bindingOpts{replicas: 6, members: []string{"fb-a", "fb-b"}, weights: map[string]int64{"fb-a": 2, "fb-b": 1}, failback: true})
	waitPlacement(t, "fb", "web", "fb-a:4 fb-b:2", waitTimeout)

	setCAPI(t, "fb-b", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
	b := waitPlacement(t, "fb", "web", "fb-a:6", grace+10*time.Second)
	if b.Annotations[workv1alpha1.FailbackAnnotation] != "fb-b" {
		t.Errorf("failback annotation = %q, want fb-b", b.Annotations[workv1alpha1.FailbackAnnotation])
	}
	reportHealthy(t, "fb", "web")
	eventually(t, 10*time.Second, "the task removed", func() error {
		if tasks := tasksOf(t, "fb", "web"); len(tasks) > 0 {
			return fmt.Errorf("tasks %+v", tasks)
		}
		return nil
	})
	consistently(t, time.Second, "no failback while fb-b is down", func() error {
		if got := placement(getBinding(t, "fb", "web")); got != "fb-a:6" {
			return fmt.Errorf("placement %q", got)
		}
		return nil
	})

	recovered := time.Now()
	setCAPI(t, "fb-b", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	b = waitPlacement(t, "fb", "web", "fb-a:4 fb-b:2", 10*time.Second)
	t.Logf("MEASURE failback: probe True → back to fb-a:4 fb-b:2 in %s", time.Since(recovered).Round(time.Millisecond))
	// The rebalance was asked by failback's own annotation; the user's
	// spec.rescheduleTriggeredAt is left alone. The decision answering it
	// is recorded no earlier than the ask, so that it is answered once.
	at, err := time.Parse(time.RFC3339, b.Annotations[workv1alpha1.FailbackTriggeredAtAnnotation])
	if err != nil || b.Spec.RescheduleTriggeredAt != nil || b.Annotations[workv1alpha1.FailbackAnnotation] != "" {
		t.Errorf("failback triggered at %q (%v), rescheduleTriggeredAt %v, failback annotation %q; want a time, nil, gone",
			b.Annotations[workv1alpha1.FailbackTriggeredAtAnnotation], err, b.Spec.RescheduleTriggeredAt, b.Annotations[workv1alpha1.FailbackAnnotation])
	}
	eventually(t, 5*time.Second, "the rebalance recorded no earlier than its ask", func() error {
		last := getBinding(t, "fb", "web").Status.LastScheduledTime
		if last == nil || last.Time.Before(at) {
			return fmt.Errorf("lastScheduledTime %v, failback triggered at %v", last, at)
		}
		return nil
	})
}

// newMachine writes a worker Machine of a member's Cluster with NodeHealthy status.
func newMachine(t *testing.T, member, name string, nodeHealthy metav1.ConditionStatus, finalizers ...string) *capiv1.Machine {
	t.Helper()
	m := &capiv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: capiNamespace, Name: name, Labels: map[string]string{capiv1.ClusterNameLabel: member}, Finalizers: finalizers},
		Spec: capiv1.MachineSpec{
			ClusterName:       member,
			Bootstrap:         capiv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
			InfrastructureRef: capiv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine", Name: name},
		},
	}
	if err := hub.Client.Create(ctx(), m); err != nil {
		t.Fatalf("create Machine %s: %v", name, err)
	}
	t.Cleanup(func() {
		releaseFinalizer(t, m)
		_ = hub.Client.Delete(ctx(), m)
	})
	setNodeHealthy(t, m, nodeHealthy)
	return m
}

func setNodeHealthy(t *testing.T, m *capiv1.Machine, status metav1.ConditionStatus) {
	t.Helper()
	update(t, m, func() {
		conditions.Set(m, metav1.Condition{Type: capiv1.MachineNodeHealthyCondition, Status: status, Reason: "Test" + string(status)})
	}, true)
}

func TestDegradedWorkersTaintTheMemberNoSchedule(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "wk-a")
	machines := []*capiv1.Machine{
		newMachine(t, "wk-a", "wk-a-0", metav1.ConditionTrue),
		newMachine(t, "wk-a", "wk-a-1", metav1.ConditionTrue),
		newMachine(t, "wk-a", "wk-a-2", metav1.ConditionTrue),
	}
	eventually(t, 10*time.Second, "WorkersAvailable True", func() error {
		if c := conditions.Get(getMember(t, "wk-a"), clusterv1alpha1.ConditionWorkersAvailable); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("WorkersAvailable = %+v", c)
		}
		return nil
	})
	setNodeHealthy(t, machines[0], metav1.ConditionFalse)
	consistently(t, time.Second, "1 of 3 unhealthy is not degraded", func() error {
		if m := getMember(t, "wk-a"); taintOf(m, clusterv1alpha1.TaintDegraded, noSchedule) != nil {
			return fmt.Errorf("tainted: %v", m.Spec.Taints)
		}
		return nil
	})
	setNodeHealthy(t, machines[1], metav1.ConditionFalse)
	waitTaint(t, "wk-a", clusterv1alpha1.TaintDegraded, noSchedule, 10*time.Second)
	c := conditions.Get(getMember(t, "wk-a"), clusterv1alpha1.ConditionWorkersAvailable)
	if c.Status != metav1.ConditionFalse || c.Message != "1 of 3 worker Machines healthy, 2 needed (50%); unhealthy: wk-a-0, wk-a-1" {
		t.Errorf("WorkersAvailable = %+v", c)
	}
	if m := getMember(t, "wk-a"); conditions.IsFalse(m, clusterv1alpha1.ConditionReady) {
		t.Errorf("degraded workers made the member not Ready: %+v", conditions.Get(m, clusterv1alpha1.ConditionReady))
	}
	setNodeHealthy(t, machines[1], metav1.ConditionTrue)
	eventually(t, 10*time.Second, "workers-degraded removed", func() error {
		if m := getMember(t, "wk-a"); len(m.Spec.Taints) > 0 {
			return fmt.Errorf("taints %v", m.Spec.Taints)
		}
		return nil
	})
}

func TestAPausedClusterIsNotAFailure(t *testing.T) {
	grace := 2 * time.Second
	startManager(t, settings{grace: grace})
	newMember(t, "ps-a")
	c := &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: capiNamespace, Name: "ps-a"}}
	update(t, c, func() { c.Spec.Paused = ptr.To(true) }, false)
	setCAPI(t, "ps-a", capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionFalse)
	eventually(t, 10*time.Second, "Reachable Unknown (ClusterPaused)", func() error {
		if r := conditions.Get(getMember(t, "ps-a"), clusterv1alpha1.ConditionReachable); r == nil || r.Status != metav1.ConditionUnknown || r.Reason != clusterv1alpha1.ClusterPausedReason {
			return fmt.Errorf("Reachable = %+v", r)
		}
		return nil
	})
	consistently(t, grace+time.Second, "no taint on a paused Cluster", func() error {
		if m := getMember(t, "ps-a"); len(m.Spec.Taints) > 0 {
			return fmt.Errorf("taints %v", m.Spec.Taints)
		}
		return nil
	})
	// Unpaused and still unreachable: a failure.
	update(t, c, func() { c.Spec.Paused = ptr.To(false) }, false)
	waitTaint(t, "ps-a", unreachable, noSchedule, 10*time.Second)
}

func TestDeletionHooksHoldALeavingMembersMachinesUntilItsWorksAreGone(t *testing.T) {
	startManager(t, settings{})
	newMember(t, "dh-a")
	c := &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: capiNamespace, Name: "dh-a"}}
	update(t, c, func() { controllerutil.AddFinalizer(c, clusterv1alpha1.ClusterFinalizer) }, false)
	t.Cleanup(func() {
		update(t, c, func() { controllerutil.RemoveFinalizer(c, clusterv1alpha1.ClusterFinalizer) }, false)
	})
	hooked := func(m *capiv1.Machine) func() error {
		return func() error {
			if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(m), m); err != nil {
				return err
			}
			if m.Annotations[clusterv1alpha1.DrainHookAnnotation] != clusterv1alpha1.DrainHookOwner ||
				m.Annotations[clusterv1alpha1.TerminateHookAnnotation] != clusterv1alpha1.DrainHookOwner {
				return fmt.Errorf("annotations %v", m.Annotations)
			}
			return nil
		}
	}
	released := func(m *capiv1.Machine) func() error {
		return func() error {
			if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(m), m); err != nil {
				return err
			}
			for _, a := range []string{clusterv1alpha1.DrainHookAnnotation, clusterv1alpha1.TerminateHookAnnotation} {
				if _, ok := m.Annotations[a]; ok {
					return fmt.Errorf("still has %s", a)
				}
			}
			return nil
		}
	}
	routine := newMachine(t, "dh-a", "dh-a-0", metav1.ConditionTrue, testFinalizer)
	leaving := newMachine(t, "dh-a", "dh-a-1", metav1.ConditionTrue, testFinalizer)
	eventually(t, 10*time.Second, "hook on dh-a-0", hooked(routine))
	eventually(t, 10*time.Second, "hook on dh-a-1", hooked(leaving))

	// A routine deletion (scale-down, rollout) is not held.
	if err := hub.Client.Delete(ctx(), routine); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "hook released from a routine deletion", released(routine))

	// The Cluster is deleted while a Work is left on the member: held.
	ensureNamespace(t, clusterv1alpha1.ExecutionNamespace("dh-a"))
	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ExecutionNamespace("dh-a"), Name: "left"}}
	if err := hub.Client.Create(ctx(), work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), work) })
	if err := hub.Client.Delete(ctx(), c); err != nil {
		t.Fatal(err)
	}
	if err := hub.Client.Delete(ctx(), leaving); err != nil {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "held while a Work is left", hooked(leaving))
	drained := time.Now()
	if err := hub.Client.Delete(ctx(), work); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "hook released once drained", released(leaving))
	t.Logf("MEASURE drain hook: last Work gone → hook released %s", time.Since(drained).Round(time.Millisecond))
	waitEvent(t, capiNamespace, "dh-a-1", "DrainHookReleased")
}
