package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

const testMember = "edge-1"

var workKey = client.ObjectKey{Namespace: "flotilla-es-edge-1", Name: "web"}

// fixture is one agent's Work reconciler between a fake hub, which can go
// down (writes fail; the agent's cache still reads), and a fake member that
// counts server-side applies.
type fixture struct {
	t       *testing.T
	hub     client.Client
	member  client.Client
	clock   *clocktesting.FakeClock
	r       *workReconciler
	mu      sync.Mutex
	hubDown bool
	applies int
}

func newFixture(t *testing.T, mode clusterv1alpha1.SyncMode) *fixture {
	f := &fixture{t: t, clock: clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
	hubScheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(hubScheme)
	_ = clusterv1alpha1.AddToScheme(hubScheme)
	_ = workv1alpha1.AddToScheme(hubScheme)
	down := func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.hubDown {
			return apierrors.NewServiceUnavailable("hub apiserver is down")
		}
		return nil
	}
	f.hub = fake.NewClientBuilder().WithScheme(hubScheme).
		WithStatusSubresource(&workv1alpha1.Work{}).
		WithObjects(&clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: testMember}, Spec: clusterv1alpha1.MemberClusterSpec{SyncMode: mode}}).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := down(); err != nil {
					return err
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := down(); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				if err := down(); err != nil {
					return err
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).Build()
	f.member = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(clientgoscheme.Scheme)).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			f.mu.Lock()
			f.applies++
			f.mu.Unlock()
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	opts := applier.Options{}
	opts.Default()
	f.r = &workReconciler{
		hub:    f.hub,
		member: testMember,
		applier: &applier.Applier{Works: f.hub, Members: member{name: testMember, client: f.member},
			Recorder: events.NewFakeRecorder(100), Options: opts},
		applied: applier.NewApplied(opts.ResyncHealthy),
		mode:    &syncModeGate{hub: f.hub, member: testMember, ttl: time.Hour, clock: f.clock},
		clock:   f.clock,
	}
	return f
}

// configMapWork is a Work of one ConfigMap app/settings with the given data.
func configMapWork(value string) *workv1alpha1.Work {
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "app", "name": "settings"}, "data": map[string]any{"k": value}}
	raw, _ := json.Marshal(cm)
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: workKey.Namespace, Name: workKey.Name},
		Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
}

func (f *fixture) setHubDown(down bool) {
	f.mu.Lock()
	f.hubDown = down
	f.mu.Unlock()
}

func (f *fixture) memberApplies() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applies
}

func (f *fixture) reconcile() (ctrl.Result, error) {
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: workKey})
}

func (f *fixture) mustReconcile() ctrl.Result {
	f.t.Helper()
	res, err := f.reconcile()
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (f *fixture) work() *workv1alpha1.Work {
	f.t.Helper()
	w := &workv1alpha1.Work{}
	if err := f.hub.Get(context.Background(), workKey, w); err != nil {
		f.t.Fatal(err)
	}
	return w
}

func (f *fixture) memberValue() string {
	cm := &corev1.ConfigMap{}
	if err := f.member.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "settings"}, cm); err != nil {
		return "<" + err.Error() + ">"
	}
	return cm.Data["k"]
}

func (f *fixture) expectApplies(what string, want int) {
	f.t.Helper()
	if got := f.memberApplies(); got != want {
		f.t.Errorf("%s: %d server-side applies in the member so far, want %d", what, got, want)
	}
}

// deploymentWork is a Work of one Deployment app/web of one replica.
func deploymentWork() *workv1alpha1.Work {
	d := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "app", "name": "web"},
		"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}}}}}
	raw, _ := json.Marshal(d)
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: workKey.Namespace, Name: workKey.Name},
		Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
}

func TestAWorkIsAppliedOnceAndNotAgainWhileUnchangedEvenAcrossAHubOutage(t *testing.T) {
	f := newFixture(t, clusterv1alpha1.Pull)
	ctx := context.Background()
	if err := f.hub.Create(ctx, deploymentWork()); err != nil {
		t.Fatal(err)
	}

	f.mustReconcile()
	f.expectApplies("first reconcile", 1)
	if w := f.work(); !conditions.IsTrue(w, workv1alpha1.WorkApplied) || conditions.IsTrue(w, workv1alpha1.WorkAvailable) {
		t.Fatalf("Work status %+v, want Applied and not yet Available", w.Status)
	}

	// The hub goes away; meanwhile the Deployment becomes ready in the member.
	f.setHubDown(true)
	d := &appsv1.Deployment{}
	if err := f.member.Get(ctx, client.ObjectKey{Namespace: "app", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := f.member.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.clock.Step(5 * time.Second)
		if _, err := f.reconcile(); err == nil {
			t.Fatal("reconcile succeeded although the Work's new status could not be written")
		}
	}
	f.expectApplies("retries while the hub is down", 1)

	f.setHubDown(false)
	f.clock.Step(5 * time.Second)
	res := f.mustReconcile()
	f.expectApplies("catching up after the hub returned", 1)
	if w := f.work(); !conditions.IsTrue(w, workv1alpha1.WorkAvailable) {
		t.Errorf("Work status after catching up %+v, want Available", w.Status)
	}
	if res.RequeueAfter != 40*time.Second {
		t.Errorf("requeue after %s, want 40s: drift repair is due 60s after the apply", res.RequeueAfter)
	}
}

func TestAChangedWorkAMissingObjectAndDueDriftRepairAreApplied(t *testing.T) {
	f := newFixture(t, clusterv1alpha1.Pull)
	ctx := context.Background()
	if err := f.hub.Create(ctx, configMapWork("v1")); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	f.expectApplies("first reconcile", 1)

	w := f.work()
	w.Spec = configMapWork("v2").Spec
	w.Generation++ // the fake hub does not count generations
	if err := f.hub.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	f.expectApplies("a new generation", 2)
	if got := f.memberValue(); got != "v2" {
		t.Errorf("member ConfigMap k=%s, want v2", got)
	}

	if err := f.member.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(10 * time.Second)
	f.mustReconcile()
	f.expectApplies("the object deleted in the member", 3)
	if got := f.memberValue(); got != "v2" {
		t.Errorf("member ConfigMap k=%s after it was deleted there, want v2 back", got)
	}

	f.clock.Step(30 * time.Second)
	f.mustReconcile()
	f.expectApplies("30s later, unchanged", 3)
	f.clock.Step(30 * time.Second)
	f.mustReconcile()
	f.expectApplies("60s after the last apply: drift repair", 4)
}

func TestTheHubAppliesAPushModeMembersWorksAndTheAgentLeavesThemAlone(t *testing.T) {
	f := newFixture(t, clusterv1alpha1.Push)
	if err := f.hub.Create(context.Background(), configMapWork("v1")); err != nil {
		t.Fatal(err)
	}
	res := f.mustReconcile()
	f.expectApplies("Push mode", 0)
	if w := f.work(); len(w.Finalizers) != 0 || len(w.Status.Conditions) != 0 {
		t.Errorf("Work finalizers %v, conditions %v; want both left to the hub", w.Finalizers, w.Status.Conditions)
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue after %s, want 1m (to notice a switch back to Pull)", res.RequeueAfter)
	}
}

func TestADeletedWorksObjectsAreRemovedFromTheMemberBeforeItGoes(t *testing.T) {
	f := newFixture(t, clusterv1alpha1.Pull)
	ctx := context.Background()
	if err := f.hub.Create(ctx, configMapWork("v1")); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	if w := f.work(); len(w.Finalizers) != 1 || w.Finalizers[0] != workv1alpha1.ExecutionFinalizer {
		t.Fatalf("finalizers %v, want the execution finalizer", w.Finalizers)
	}
	if err := f.hub.Delete(ctx, f.work()); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	if got := f.memberValue(); !apierrors.IsNotFound(f.member.Get(ctx, client.ObjectKey{Namespace: "app", Name: "settings"}, &corev1.ConfigMap{})) {
		t.Errorf("member ConfigMap still there (k=%s) after its Work was deleted", got)
	}
	if err := f.hub.Get(ctx, workKey, &workv1alpha1.Work{}); !apierrors.IsNotFound(err) {
		t.Errorf("Work still on the hub after its objects were removed: %v", err)
	}
}
