package propagation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// TestAMassRemovalIsPacedAndReported: many placements narrowed off a member
// at once (nobody asked for the objects to go: a policy narrowed by
// mistake, a member no longer matching) remove their objects from it no
// faster than the member's removal pace; the member says so, naming what
// asked for the removals, and says when nothing waits any more.
func TestAMassRemovalIsPacedAndReported(t *testing.T) {
	const ns, n = "mass", 24
	namespace(t, ns, true)
	bindings, inMember1 := placedConfigMaps(t, ns, "mass", member1, n)

	// Everything that came before in the suite has left its window.
	time.Sleep(removals.Window)
	start := time.Now()
	for _, rb := range bindings {
		schedule(t, rb, nil)
	}
	member := func() (*clusterv1alpha1.MemberCluster, error) {
		mc := &clusterv1alpha1.MemberCluster{}
		return mc, hub.Client.Get(ctx(), client.ObjectKey{Name: member1}, mc)
	}
	eventually(t, "member1 says its removals are paced and why", func() error {
		mc, err := member()
		if err != nil {
			return err
		}
		return hasCondition(mc, clusterv1alpha1.ConditionRemovalsPaced, metav1.ConditionTrue, binding.RemovalsPacedReason,
			"the first to wait was asked for by ResourceBinding mass/cm-")
	})
	eventually(t, "a MassRemoval event on member1", func() error {
		return eventOn("", member1, binding.RemovalsPacedReason, "is paced: at most")
	})
	// A few windows: longer than the suite's usual wait.
	for deadline := time.Now().Add(12 * removals.Window); ; time.Sleep(100 * time.Millisecond) {
		got, err := inMember1()
		if err == nil && got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ConfigMaps still in member1 after %s (%v)", got, time.Since(start), err)
		}
	}
	// The first window allows fewer than n: removing them all spans at
	// least one more, and no more than the windows a share of the member's
	// size at the start allows (24 at a quarter: 6 a window, 4 windows),
	// not a share of what is left each window.
	if took := time.Since(start); took < removals.Window || took > 5*removals.Window {
		t.Errorf("all %d removed in %s, want between one and five windows of %s", n, took, removals.Window)
	}
	t.Logf("MEASURE %d removals from one member paced at a share of %.2f per %s: %s", n, removals.Share, removals.Window, time.Since(start).Round(100*time.Millisecond))
	eventually(t, "member1 says nothing waits any more", func() error {
		mc, err := member()
		if err != nil {
			return err
		}
		return hasCondition(mc, clusterv1alpha1.ConditionRemovalsPaced, metav1.ConditionFalse, clusterv1alpha1.RemovalsNotPacedReason, "")
	})
}

// TestANewLeaderKeepsPacingWhereThePreviousOneWas: the removal pace lives
// in memory, so a leader taking over does not know what its predecessor
// removed in its last window. A member whose RemovalsPaced condition the
// predecessor left True is resumed with its window used up: its next
// removal waits a window rather than adding a second burst to the first.
func TestANewLeaderKeepsPacingWhereThePreviousOneWas(t *testing.T) {
	const ns = "resumed"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: resumed}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: resumed}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: resumed, labels: {app: resumed}}
`)
	rb := bindAndSchedule(t, ns, "one", "ConfigMap", placement(member2, 0))
	inMember2 := func() error {
		return members[member2].Get(ctx(), client.ObjectKey{Namespace: ns, Name: "one"}, &corev1.ConfigMap{})
	}
	eventually(t, "the ConfigMap in member2", inMember2)

	// What a leader killed while pacing member2 leaves behind; this
	// process has removed nothing from member2 for a window.
	mc := &clusterv1alpha1.MemberCluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member2}, mc); err != nil {
		t.Fatal(err)
	}
	before := mc.DeepCopy()
	conditions.Set(mc, metav1.Condition{Type: clusterv1alpha1.ConditionRemovalsPaced, Status: metav1.ConditionTrue,
		Reason: binding.RemovalsPacedReason, Message: "paced by the previous leader"})
	if err := hub.Client.Status().Patch(ctx(), mc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(removals.Window)

	start := time.Now()
	schedule(t, rb, nil)
	for deadline := time.Now().Add(4 * removals.Window); ; time.Sleep(100 * time.Millisecond) {
		err := inMember2()
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ConfigMap still in member2 after %s (%v)", time.Since(start), err)
		}
	}
	if took := time.Since(start); took < removals.Window-time.Second {
		t.Errorf("removed %s after the placement narrowed: the new leader did not wait out the window of %s its predecessor may have used up", took, removals.Window)
	}
	eventually(t, "member2 says nothing waits any more", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member2}, mc); err != nil {
			return err
		}
		return hasCondition(mc, clusterv1alpha1.ConditionRemovalsPaced, metav1.ConditionFalse, clusterv1alpha1.RemovalsNotPacedReason, "")
	})
}

// TestDeletingTemplatesRemovesTheirObjectsAtOnce: a removal the user asked
// for — templates deleted, or the hub namespace holding them — is made at
// once, as in Karmada, however many there are: no removal pace, no
// RemovalsPaced condition on the member.
func TestDeletingTemplatesRemovesTheirObjectsAtOnce(t *testing.T) {
	const ns, n = "deleted-at-once", 24
	namespace(t, ns, true)
	_, inMember2 := placedConfigMaps(t, ns, "gone", member2, n)

	start := time.Now()
	if err := hub.Client.DeleteAllOf(ctx(), &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels{"app": "gone"}); err != nil {
		t.Fatal(err)
	}
	// Paced, a quarter of 24 would go now and the rest a window later
	// (5 s): all gone within one window shows none waited for a turn.
	for deadline := start.Add(removals.Window); ; time.Sleep(50 * time.Millisecond) {
		got, err := inMember2()
		if err == nil && got == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d ConfigMaps still in member2 %s after their templates were deleted: removals the user asked for were paced", got, n, time.Since(start).Round(time.Millisecond))
		}
	}
	t.Logf("MEASURE %d templates deleted → their objects gone from the member in %s", n, time.Since(start).Round(10*time.Millisecond))
	mc := &clusterv1alpha1.MemberCluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member2}, mc); err != nil {
		t.Fatal(err)
	}
	if conditions.IsTrue(mc, clusterv1alpha1.ConditionRemovalsPaced) {
		t.Errorf("member2 says its removals are paced: %s", conditions.GetMessage(mc, clusterv1alpha1.ConditionRemovalsPaced))
	}
}

// placedConfigMaps creates in ns a policy selecting ConfigMaps labelled
// app=<app> and n such ConfigMaps, places their bindings on member, and
// waits until all n are there. It returns the bindings and a count of
// those ConfigMaps in the member.
func placedConfigMaps(t *testing.T, ns, app, member string, n int) ([]*workv1alpha1.ResourceBinding, func() (int, error)) {
	t.Helper()
	var manifests strings.Builder
	fmt.Fprintf(&manifests, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: %s}}}]
`, ns, app)
	for i := range n {
		fmt.Fprintf(&manifests, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d, namespace: %s, labels: {app: %s}}\n", i, ns, app)
	}
	createYAML(t, manifests.String())
	bindings := make([]*workv1alpha1.ResourceBinding, n)
	for i := range n {
		bindings[i] = bindAndSchedule(t, ns, fmt.Sprintf("cm-%02d", i), "ConfigMap", placement(member, 0))
	}
	count := func() (int, error) {
		list := &corev1.ConfigMapList{}
		if err := members[member].List(ctx(), list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return 0, err
		}
		return len(list.Items), nil
	}
	eventually(t, "every ConfigMap in "+member, func() error {
		if got, err := count(); err != nil || got != n {
			return fmt.Errorf("%d of %d (%v)", got, n, err)
		}
		return nil
	})
	return bindings, count
}
