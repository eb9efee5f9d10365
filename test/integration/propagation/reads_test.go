package propagation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
)

// gate holds gatedMember's applies into gatedNamespace until it opens.
var gate = struct {
	open    chan struct{}
	waiting atomic.Int32
}{open: make(chan struct{})}

// gatedClient is a client of the member at cfg whose applies into
// gatedNamespace wait for the gate — longer than the member timeout, as a
// member's apply can — and then go through.
func gatedClient(cfg *rest.Config) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if namespaceOf(obj) == gatedNamespace {
				gate.waiting.Add(1)
				<-gate.open
				gate.waiting.Add(-1)
				ctx = context.WithoutCancel(ctx)
			}
			return c.Apply(ctx, obj, opts...)
		},
	}), nil
}

// namespaceOf is the namespace an apply configuration is for, typed or
// unstructured.
func namespaceOf(obj runtime.ApplyConfiguration) string {
	switch o := obj.(type) {
	case interface{ GetNamespace() *string }:
		return ptr.Deref(o.GetNamespace(), "")
	case interface{ GetNamespace() string }:
		return o.GetNamespace()
	}
	return ""
}

// TestAChangeInAMemberIsReadBackWhileItsAppliesAreHeld: every apply slot of
// a member is taken by applies that do not end and more wait; a Deployment
// the member holds as applied turns Ready there, and its Work says so on
// the hub at once — the read back does not queue behind the applies. Once
// the applies go through, every Work is applied.
func TestAChangeInAMemberIsReadBackWhileItsAppliesAreHeld(t *testing.T) {
	const appNS = "gated-ready"
	execNS := clusterv1alpha1.ExecutionNamespace(gatedMember)
	create(t, &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: gatedMember},
		Spec: clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "default", Name: gatedMember}}})
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: execNS}})
	opened := false
	openGate := func() {
		if !opened {
			opened = true
			close(gate.open)
		}
	}
	t.Cleanup(openGate)

	newWork := func(name string, obj client.Object) *workv1alpha1.Work {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: execNS, Name: name}}
		w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
		create(t, w)
		return w
	}
	web := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}}}
	ready := newWork("web", web)
	eventually(t, "the Deployment applied through the gated member", func() error {
		w := &workv1alpha1.Work{}
		if err := hub.Client.Get(ctx(), keyOf(ready), w); err != nil {
			return err
		}
		return hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied, "")
	})

	// More Works than the member's apply slots, each applying a ConfigMap
	// the gate holds.
	held := execution.DefaultMaxInFlightPerMember + 2
	var slow []*workv1alpha1.Work
	for i := range held {
		slow = append(slow, newWork(fmt.Sprintf("slow-%d", i), &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: gatedNamespace, Name: fmt.Sprintf("slow-%d", i)}, Data: map[string]string{"k": "v"}}))
	}
	eventually(t, "every apply slot of the gated member held", func() error {
		if n := gate.waiting.Load(); n != execution.DefaultMaxInFlightPerMember {
			return fmt.Errorf("%d applies held, want %d (the member's slots)", n, execution.DefaultMaxInFlightPerMember)
		}
		return nil
	})

	reportReady(t, member2, appNS, "web", 2)
	eventually(t, "the Work of the Deployment Available while the member's applies are held", func() error {
		if n := gate.waiting.Load(); n != execution.DefaultMaxInFlightPerMember {
			t.Fatalf("%d applies held, want %d: the test no longer holds the member's slots", n, execution.DefaultMaxInFlightPerMember)
		}
		w := &workv1alpha1.Work{}
		if err := hub.Client.Get(ctx(), keyOf(ready), w); err != nil {
			return err
		}
		if !conditions.IsTrue(w, workv1alpha1.WorkAvailable) {
			return fmt.Errorf("Available: %s", rawJSON(conditions.Get(w, workv1alpha1.WorkAvailable)))
		}
		return nil
	})

	openGate()
	for _, w := range slow {
		eventually(t, "Work "+w.Name+" applied once its member answers", func() error {
			got := &workv1alpha1.Work{}
			if err := hub.Client.Get(ctx(), keyOf(w), got); err != nil {
				return err
			}
			return hasCondition(got, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied, "")
		})
	}
}
