package propagation_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// TestBindingsAndWorksAreCreatedHoldingTheirFinalizers: a new binding is
// created with the render phase's finalizer, and a Push member's Work with
// the execution controller's, so that neither costs the hub a write of its
// own (which, on a binding, raced the place phase's first decision). A Pull
// member's Work is created without: its agent adds the finalizer when it
// takes the Work, so that a Work of a member whose agent never came is
// deleted at once. Watches opened before the template is created see each
// object as it was created.
func TestBindingsAndWorksAreCreatedHoldingTheirFinalizers(t *testing.T) {
	const ns, pulled = "created-holding", "pulled"
	mc := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: pulled},
		Spec: clusterv1alpha1.MemberClusterSpec{SyncMode: clusterv1alpha1.Pull,
			ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "default", Name: pulled}},
	}
	create(t, mc)
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), mc) })
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace(pulled)}})
	namespace(t, ns, true)

	wctx, stop := context.WithCancel(ctx())
	defer stop()
	bindings := watchHub(wctx, t, &workv1alpha1.ResourceBindingList{}, ns)
	works := map[string]watch.Interface{}
	for _, m := range []string{member1, pulled} {
		works[m] = watchHub(wctx, t, &workv1alpha1.WorkList{}, clusterv1alpha1.ExecutionNamespace(m))
	}

	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: created-holding}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: web}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: created-holding}
data: {k: v}
`)
	rb := bindAndSchedule(t, ns, "web", "ConfigMap", placement(member1, 0, pulled, 0))

	first := func(w watch.Interface, name string) client.Object {
		t.Helper()
		for {
			select {
			case e := <-w.ResultChan():
				obj, ok := e.Object.(client.Object)
				if ok && obj.GetName() == name {
					if e.Type != watch.Added {
						t.Fatalf("first event of %s is %s, not Added", name, e.Type)
					}
					return obj
				}
			case <-wctx.Done():
				t.Fatalf("no event of %s before the test's deadline", name)
			}
		}
	}
	holds := func(what string, obj client.Object, finalizer string, want bool) {
		t.Helper()
		if got := slices.Contains(obj.GetFinalizers(), finalizer); got != want {
			t.Errorf("%s created with finalizers %v: holding %s is %t, want %t", what, obj.GetFinalizers(), finalizer, got, want)
		}
	}
	holds("the binding", first(bindings, rb.Name), workv1alpha1.BindingFinalizer, true)
	workName := binding.WorkName(binding.KindResourceBinding, ns, rb.Name)
	holds("member1's Work", first(works[member1], workName), workv1alpha1.ExecutionFinalizer, true)
	holds("the Pull member's Work", first(works[pulled], workName), workv1alpha1.ExecutionFinalizer, false)

	eventually(t, "the ConfigMap applied to member1", func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	})
	// Deleting the template removes both Works: the Pull member's, never
	// taken by an agent, at once.
	if err := hub.Client.Delete(ctx(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both Works and the binding gone", func() error {
		for _, m := range []string{member1, pulled} {
			w := &workv1alpha1.Work{}
			err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(m), Name: workName}, w)
			if err == nil {
				return fmt.Errorf("the Work of %s remains, finalizers %v", m, w.Finalizers)
			}
		}
		return goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	})
}

// TestANewBindingIsNotWrittenUntilPlaced: the place phase speaks first. A
// binding left unplaced is written by no one after the detector created it
// (no finalizer patch, no Rendered or FullyApplied "not scheduled yet"),
// which is what let those writes race the first decision; once placed and
// then emptied, both conditions follow the placement to NotScheduled.
func TestANewBindingIsNotWrittenUntilPlaced(t *testing.T) {
	const ns = "unplaced"
	namespace(t, ns, true)
	wctx, stop := context.WithCancel(ctx())
	defer stop()
	events := watchHub(wctx, t, &workv1alpha1.ResourceBindingList{}, ns)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: unplaced}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: web}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: unplaced}
data: {k: v}
`)
	rb := waitForBinding(t, ns, "web", "ConfigMap")
	// The render and aggregate phases react to a new binding within
	// milliseconds; 3 s without a write is their silence.
	quiet := time.After(3 * time.Second)
	for done := false; !done; {
		select {
		case e := <-events.ResultChan():
			if e.Type == watch.Added {
				continue
			}
			b, _ := e.Object.(*workv1alpha1.ResourceBinding)
			if b != nil {
				t.Fatalf("the unplaced binding was written (%s): finalizers %v, conditions %+v", e.Type, b.Finalizers, b.Status.Conditions)
			}
			t.Fatalf("watch event %s %v", e.Type, e.Object)
		case <-quiet:
			done = true
		}
	}

	schedule(t, rb, placement(member1, 0))
	eventually(t, "Rendered and FullyApplied True once placed", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		if err := hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered, ""); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionTrue, workv1alpha1.BindingReasonFullyApplied, "applied on member1")
	})
	schedule(t, rb, nil)
	eventually(t, "both NotScheduled once the placement is emptied", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		if err := hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonNotScheduled, ""); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionFalse, workv1alpha1.BindingReasonNotScheduled, "")
	})
}

// watchHub watches the hub's objects of list's kind in namespace from now
// on, until ctx ends.
func watchHub(ctx context.Context, t *testing.T, list client.ObjectList, namespace string) watch.Interface {
	t.Helper()
	watcher, err := client.NewWithWatch(hub.Config, client.Options{Scheme: hub.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(ctx, list, client.InNamespace(namespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}
