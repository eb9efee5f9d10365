package quota_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// members are the fleet every test schedules on: room for far more than
// any quota here.
var members = []string{"m1", "m2", "m3"}

var fleetOnce sync.Once

// fleet writes the members once: Ready MemberClusters serving apps/v1
// Deployments and v1 ConfigMaps with 1000 CPU, 4Ti and 10000 pods free each, and their
// execution namespaces.
func fleet(t *testing.T) {
	t.Helper()
	fleetOnce.Do(func() {
		ctx := context.Background()
		for _, name := range members {
			m := &clusterv1alpha1.MemberCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "capi", Name: name}},
			}
			must(t, env.Client.Create(ctx, m))
			m.Status = clusterv1alpha1.MemberClusterStatus{
				Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}},
				APIEnablements: []clusterv1alpha1.APIEnablement{
					{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
					{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
				},
				CapacityModel: &clusterv1alpha1.CapacityModel{
					ObservedTime: metav1.NewTime(time.Now().Add(-time.Hour)),
					NodeGroups:   []clusterv1alpha1.NodeGroup{{Count: 1, Free: list("cpu", "1000", "memory", "4Ti", "pods", "10000")}},
				},
			}
			must(t, env.Client.Status().Update(ctx, m))
			must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace(name)}}))
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// render is a ResourceList as "key=value" pairs sorted by key.
func render(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

var namespaces = map[string]int{}

// namespace creates a namespace, federated or not, named base — or base-2,
// base-3… when the test runs again in the same apiserver (-count) — and
// returns its name. envtest runs no namespace controller, so tests delete
// what they create inside by hand.
func namespace(t *testing.T, base string, federated bool) string {
	t.Helper()
	namespaces[base]++
	name := base
	if n := namespaces[base]; n > 1 {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if federated {
		ns.Labels = map[string]string{policyv1alpha1.FederatedLabel: "true"}
	}
	must(t, env.Client.Create(context.Background(), ns))
	return name
}

// frq creates a FederatedResourceQuota, deleted after the test.
func frq(t *testing.T, ns, name string, overall corev1.ResourceList, assignments ...policyv1alpha1.StaticClusterAssignment) *policyv1alpha1.FederatedResourceQuota {
	t.Helper()
	q := &policyv1alpha1.FederatedResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: overall, StaticAssignments: assignments},
	}
	must(t, env.Client.Create(context.Background(), q))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
	return q
}

// req is one replica's requests (and limits, after a "|": "cpu", "1", "|", "cpu", "2").
func req(kv ...string) *workv1alpha1.ReplicaRequirements {
	for i, s := range kv {
		if s == "|" {
			return &workv1alpha1.ReplicaRequirements{ResourceRequest: list(kv[:i]...), ResourceLimits: list(kv[i+1:]...)}
		}
	}
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: list(kv...)}
}

// divided spreads replicas over the members by equal weights.
var divided = &policyv1alpha1.Placement{
	ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members},
	ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
	},
}

// newBinding is the binding the detector would write for a Deployment.
func newBinding(ns, name string, replicas int32, r *workv1alpha1.ReplicaRequirements) *workv1alpha1.ResourceBinding {
	return &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-deployment"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:            workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name},
			Replicas:            replicas,
			ReplicaRequirements: r,
			Placement:           divided.DeepCopy(),
		},
	}
}

// binding creates a binding, deleted after the test.
func binding(t *testing.T, ns, name string, replicas int32, r *workv1alpha1.ReplicaRequirements) *workv1alpha1.ResourceBinding {
	t.Helper()
	b := newBinding(ns, name, replicas, r)
	must(t, env.Client.Create(context.Background(), b))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	return b
}

// scale sets a binding's replicas, as the detector does when its template scales.
func scale(t *testing.T, b *workv1alpha1.ResourceBinding, replicas int32) {
	t.Helper()
	ctx := context.Background()
	cur := &workv1alpha1.ResourceBinding{}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(b), cur))
	before := cur.DeepCopy()
	cur.Spec.Replicas = replicas
	must(t, env.Client.Patch(ctx, cur, client.MergeFrom(before)))
}

const timeout = 30 * time.Second

// eventually polls get until cond holds, or fails with what was last seen.
func eventually[T client.Object](t *testing.T, obj T, what string, cond func(T) bool, describe func(T) string) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if err == nil && cond(obj) {
			return obj
		}
		if time.Now().After(deadline) {
			t.Fatalf("%T %s/%s: want %s; have %s (err %v)", obj, obj.GetNamespace(), obj.GetName(), what, describe(obj), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scheduledCondition(b *workv1alpha1.ResourceBinding) *metav1.Condition {
	return conditions.Get(b, workv1alpha1.ConditionScheduled)
}

func describeBinding(b *workv1alpha1.ResourceBinding) string {
	return fmt.Sprintf("clusters %v, Scheduled %+v", b.Spec.Clusters, scheduledCondition(b))
}

// waitPlaced waits for Scheduled=True with replicas placed on members.
func waitPlaced(t *testing.T, b *workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
	t.Helper()
	return eventually(t, b, "Scheduled=True", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduledCondition(b)
		return c != nil && c.Status == metav1.ConditionTrue && b.Generation == b.Status.SchedulerObservedGeneration
	}, describeBinding)
}

// waitRefused waits for Scheduled=False, reason QuotaExceeded, and returns its message.
func waitRefused(t *testing.T, b *workv1alpha1.ResourceBinding) string {
	t.Helper()
	got := eventually(t, b, "Scheduled=False/QuotaExceeded", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduledCondition(b)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == workv1alpha1.BindingReasonQuotaExceeded
	}, describeBinding)
	return scheduledCondition(got).Message
}

func placedReplicas(b *workv1alpha1.ResourceBinding) int32 {
	var n int32
	for _, c := range b.Spec.Clusters {
		n += c.Replicas
	}
	return n
}

func describeQuota(q *policyv1alpha1.FederatedResourceQuota) string {
	return fmt.Sprintf("overall %s, used %s, aggregated %+v, conditions %+v", render(q.Status.Overall), render(q.Status.OverallUsed), q.Status.AggregatedStatus, q.Status.Conditions)
}

var nsGVK = corev1.SchemeGroupVersion.WithKind("Namespace")

// waitEvent waits for a Warning event on a FederatedResourceQuota.
func waitEvent(t *testing.T, ns, name, reason, note string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var seen []string
	for time.Now().Before(deadline) {
		list := &eventsv1.EventList{}
		must(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
		seen = nil
		for _, e := range list.Items {
			if e.Regarding.Kind == "FederatedResourceQuota" && e.Regarding.Name == name && e.Reason == reason && e.Note == note && e.Type == corev1.EventTypeWarning {
				return
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no Warning event %s %q on FederatedResourceQuota %s/%s; seen %q", reason, note, ns, name, seen)
}
