package failover_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

const (
	capiNamespace = "capi"
	waitTimeout   = 30 * time.Second
)

func ctx() context.Context { return context.Background() }

// eventually retries f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// consistently checks that f keeps returning nil for d.
func consistently(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := hub.Client.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// newMember writes a CAPI Cluster whose API answers and whose control plane
// is available, and its enrolled MemberCluster serving Deployments with room
// for 10,000 replicas of 100m; both go when the test ends.
func newMember(t *testing.T, name string) {
	t.Helper()
	ensureNamespace(t, capiNamespace)
	c := &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: capiNamespace, Name: name,
		Labels:      map[string]string{clusterv1alpha1.MemberLabel: name},
		Annotations: map[string]string{clusterv1alpha1.MemberNameAnnotation: name}},
		Spec: capiv1.ClusterSpec{
			ControlPlaneEndpoint: capiv1.APIEndpoint{Host: "127.0.0.1", Port: 6443},
			ControlPlaneRef:      capiv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: name},
			InfrastructureRef:    capiv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerCluster", Name: name},
		}}
	if err := hub.Client.Create(ctx(), c); err != nil {
		t.Fatalf("create Cluster %s: %v", name, err)
	}
	m := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: capiNamespace, Name: name}},
	}
	if err := hub.Client.Create(ctx(), m); err != nil {
		t.Fatalf("create member %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = hub.Client.Delete(ctx(), m)
		_ = hub.Client.Delete(ctx(), c)
	})
	setCAPI(t, name, capiv1.ClusterRemoteConnectionProbeCondition, metav1.ConditionTrue)
	setCAPI(t, name, capiv1.ClusterControlPlaneAvailableCondition, metav1.ConditionTrue)
	update(t, m, func() {
		conditions.Set(m, metav1.Condition{Type: clusterv1alpha1.ConditionEnrolled, Status: metav1.ConditionTrue, Reason: clusterv1alpha1.EnrolledReason})
		m.Status.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}}}
		m.Status.CapacityModel = &clusterv1alpha1.CapacityModel{ObservedTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourcePods: resource.MustParse("10000")}}}}
	}, true)
	// Ready, and the not-ready taint the member was born with taken off: a
	// Divided binding created before that is placed without the member and,
	// as in Karmada, not re-divided when it becomes eligible.
	eventually(t, waitTimeout, "member "+name+" Ready and untainted", func() error {
		m := getMember(t, name)
		if !conditions.IsTrue(m, clusterv1alpha1.ConditionReady) {
			return fmt.Errorf("Ready = %+v", conditions.Get(m, clusterv1alpha1.ConditionReady))
		}
		if len(m.Spec.Taints) > 0 {
			return fmt.Errorf("taints %+v", m.Spec.Taints)
		}
		return nil
	})
}

// update re-reads obj, applies change and writes it (its status when
// status is true), retrying on conflicts.
func update(t *testing.T, obj client.Object, change func(), status bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		if status {
			return hub.Client.Status().Update(ctx(), obj)
		}
		return hub.Client.Update(ctx(), obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// setCAPI sets a condition of a member's CAPI Cluster, as Cluster API would.
func setCAPI(t *testing.T, member, conditionType string, status metav1.ConditionStatus) {
	t.Helper()
	c := &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: capiNamespace, Name: member}}
	update(t, c, func() {
		conditions.Set(c, metav1.Condition{Type: conditionType, Status: status, Reason: "Test" + string(status)})
	}, true)
}

func getMember(t *testing.T, name string) *clusterv1alpha1.MemberCluster {
	t.Helper()
	m := &clusterv1alpha1.MemberCluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, m); err != nil {
		t.Fatalf("read member %s: %v", name, err)
	}
	return m
}

func taintOf(m *clusterv1alpha1.MemberCluster, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i := range m.Spec.Taints {
		if m.Spec.Taints[i].Key == key && m.Spec.Taints[i].Effect == effect {
			return &m.Spec.Taints[i]
		}
	}
	return nil
}

// waitTaint waits for a taint on the member and returns when it was added.
func waitTaint(t *testing.T, member, key string, effect corev1.TaintEffect, timeout time.Duration) time.Time {
	t.Helper()
	var added time.Time
	eventually(t, timeout, fmt.Sprintf("taint %s:%s on %s", key, effect, member), func() error {
		m := getMember(t, member)
		tt := taintOf(m, key, effect)
		if tt == nil {
			return fmt.Errorf("taints %v", m.Spec.Taints)
		}
		added = tt.TimeAdded.Time
		return nil
	})
	return added
}

// taintByHand adds a NoExecute taint as a user (or kubectl flotilla taint) would.
func taintByHand(t *testing.T, member, key string) {
	t.Helper()
	m := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: member}}
	now := metav1.Now()
	update(t, m, func() {
		m.Spec.Taints = append(m.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
	}, false)
}

func untaintByHand(t *testing.T, member, key string) {
	t.Helper()
	m := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: member}}
	update(t, m, func() {
		m.Spec.Taints = slices.DeleteFunc(m.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == key })
	}, false)
}

// bindingOpts shape a test binding.
type bindingOpts struct {
	replicas    int32
	weights     map[string]int64 // static weights; nil divides equally over members
	members     []string         // clusterAffinity clusterNames
	purgeMode   policyv1alpha1.PurgeMode
	failback    bool
	tolerations []corev1.Toleration
}

// newBinding writes a Deployment's ResourceBinding as the detector would.
func newBinding(t *testing.T, namespace, name string, o bindingOpts) *workv1alpha1.ResourceBinding {
	t.Helper()
	ensureNamespace(t, namespace)
	var weights []policyv1alpha1.StaticClusterWeight
	for _, m := range o.members {
		w := int64(1)
		if o.weights != nil {
			w = o.weights[m]
		}
		weights = append(weights, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: w})
	}
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: namespace, Name: name},
			Replicas: o.replicas,
			ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"),
			}},
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{ClusterNames: o.members},
				ClusterTolerations: o.tolerations,
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
					WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
				},
			},
		},
	}
	if o.purgeMode != "" || o.failback {
		b.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: o.purgeMode}}
		if o.failback {
			b.Spec.Failover.Cluster.Failback = &o.failback
		}
	}
	if err := hub.Client.Create(ctx(), b); err != nil {
		t.Fatalf("create binding %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), b) })
	return b
}

func getBinding(t *testing.T, namespace, name string) *workv1alpha1.ResourceBinding {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: name}, b); err != nil {
		t.Fatalf("read binding %s/%s: %v", namespace, name, err)
	}
	return b
}

// placement renders spec.clusters as "a:4 b:2".
func placement(b *workv1alpha1.ResourceBinding) string {
	parts := make([]string, 0, len(b.Spec.Clusters))
	for _, c := range b.Spec.Clusters {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Name, c.Replicas))
	}
	return strings.Join(parts, " ")
}

func waitPlacement(t *testing.T, namespace, name, want string, timeout time.Duration) *workv1alpha1.ResourceBinding {
	t.Helper()
	var b *workv1alpha1.ResourceBinding
	eventually(t, timeout, fmt.Sprintf("placement %q of %s", want, name), func() error {
		b = getBinding(t, namespace, name)
		if got := placement(b); got != want {
			return fmt.Errorf("placement %q, tasks %+v", got, b.Spec.GracefulEvictionTasks)
		}
		return nil
	})
	return b
}

func taskFor(b *workv1alpha1.ResourceBinding, member string) *workv1alpha1.GracefulEvictionTask {
	for i := range b.Spec.GracefulEvictionTasks {
		if b.Spec.GracefulEvictionTasks[i].FromCluster == member {
			return &b.Spec.GracefulEvictionTasks[i]
		}
	}
	return nil
}

// reportHealthy writes the binding's status as the status controller would
// once its replicas are Ready on every member of spec.clusters.
func reportHealthy(t *testing.T, namespace, name string) {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	update(t, b, func() {
		b.Status.AggregatedStatus = nil
		for _, c := range b.Spec.Clusters {
			b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: c.Name, Applied: true, Health: workv1alpha1.ResourceHealthy})
		}
		b.Status.ReadyReplicas = b.Spec.Replicas
		conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue,
			Reason: workv1alpha1.BindingReasonFullyApplied, ObservedGeneration: b.Generation})
	}, true)
}

// evictionRecorder polls a namespace's bindings and records, at 20 ms
// precision, when each was first seen with an eviction task.
type evictionRecorder struct {
	mu   sync.Mutex
	seen map[string]time.Time
	stop chan struct{}
	done chan struct{}
}

func recordEvictions(t *testing.T, namespace string) *evictionRecorder {
	r := &evictionRecorder{seen: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			list := &workv1alpha1.ResourceBindingList{}
			if err := hub.Client.List(ctx(), list, client.InNamespace(namespace)); err == nil {
				now := time.Now()
				r.mu.Lock()
				for i := range list.Items {
					if _, ok := r.seen[list.Items[i].Name]; !ok && len(list.Items[i].Spec.GracefulEvictionTasks) > 0 {
						r.seen[list.Items[i].Name] = now
					}
				}
				r.mu.Unlock()
			}
			select {
			case <-r.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(r.close)
	return r
}

func (r *evictionRecorder) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// times returns the eviction times seen so far, in order.
func (r *evictionRecorder) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Time, 0, len(r.seen))
	for _, at := range r.seen {
		out = append(out, at)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

func (r *evictionRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// achievedRate is evictions per second between the first and the last.
func achievedRate(times []time.Time) float64 {
	if len(times) < 2 {
		return 0
	}
	return float64(len(times)-1) / times[len(times)-1].Sub(times[0]).Seconds()
}

// events lists the events regarding an object with a reason.
// waitEvent waits for an event with the reason about the named object:
// events are recorded asynchronously, after the change they report.
func waitEvent(t *testing.T, namespace, name, reason string) {
	t.Helper()
	eventually(t, 10*time.Second, "a "+reason+" event on "+name, func() error {
		if len(events(t, namespace, name, reason)) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
}

func events(t *testing.T, namespace, name, reason string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := hub.Client.List(ctx(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
