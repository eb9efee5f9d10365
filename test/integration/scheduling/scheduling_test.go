package scheduling_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// member writes a Ready MemberCluster serving apps/v1 Deployments, with one
// node group of the given free CPU.
func member(t *testing.T, name, region, freeCPU string, nodes int32) *clusterv1alpha1.MemberCluster {
	t.Helper()
	ctx := context.Background()
	m := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}},
		Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "capi", Name: name}, Region: region},
	}
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatalf("create member %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), m) })
	m.Status = clusterv1alpha1.MemberClusterStatus{
		Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}},
		APIEnablements: []clusterv1alpha1.APIEnablement{
			{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
			{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
		},
		CapacityModel: &clusterv1alpha1.CapacityModel{
			ObservedTime: metav1.NewTime(time.Now().Add(-time.Hour)),
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: nodes, Free: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(freeCPU), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110"),
			}}},
		},
	}
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatalf("status of member %s: %v", name, err)
	}
	return m
}

func binding(t *testing.T, name string, replicas int32, placement *policyv1alpha1.Placement) *workv1alpha1.ResourceBinding {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name},
			Replicas: replicas,
			ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"),
			}},
			Placement: placement,
		},
	}
	if err := env.Client.Create(context.Background(), b); err != nil {
		t.Fatalf("create binding %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	return b
}

func staticWeights(weights map[string]int64) *policyv1alpha1.Placement {
	var list []policyv1alpha1.StaticClusterWeight
	for name, w := range weights {
		list = append(list, policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{name}}, Weight: w})
	}
	return &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: list},
	}}
}

// waitFor polls the binding until cond holds, or fails with the last state.
func waitFor(t *testing.T, b *workv1alpha1.ResourceBinding, what string, cond func(*workv1alpha1.ResourceBinding) bool) *workv1alpha1.ResourceBinding {
	t.Helper()
	return waitIn(t, env.Client, b, what, cond)
}

// waitIn is waitFor on the apiserver of c.
func waitIn(t *testing.T, c client.Client, b *workv1alpha1.ResourceBinding, what string, cond func(*workv1alpha1.ResourceBinding) bool) *workv1alpha1.ResourceBinding {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	got := &workv1alpha1.ResourceBinding{}
	for time.Now().Before(deadline) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), got); err == nil && cond(got) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("binding %s: want %s; have clusters %v, conditions %+v", b.Name, what, got.Spec.Clusters, got.Status.Conditions)
	return nil
}

func placement(b *workv1alpha1.ResourceBinding) string {
	var parts []string
	for _, c := range b.Spec.Clusters {
		parts = append(parts, c.Name+":"+itoa(c.Replicas))
	}
	return strings.Join(parts, ",")
}

func itoa(i int32) string { return resource.NewQuantity(int64(i), resource.DecimalSI).String() }

func scheduled(b *workv1alpha1.ResourceBinding) *metav1.Condition {
	return conditions.Get(b, workv1alpha1.ConditionScheduled)
}

func TestStaticWeightsDivideAndMoveOffAnUntoleratedTaintOnlyWhenEvicted(t *testing.T) {
	m1 := member(t, "sw-a", "r0", "64", 1)
	member(t, "sw-b", "r0", "64", 1)
	b := binding(t, "web", 6, staticWeights(map[string]int64{"sw-a": 2, "sw-b": 1}))

	// Writing spec.clusters bumps the generation; the scheduler observes it
	// on its next pass, so the placement is read once it has.
	got := waitFor(t, b, "placement sw-a:4,sw-b:2 observed", func(b *workv1alpha1.ResourceBinding) bool {
		return placement(b) == "sw-a:4,sw-b:2" && b.Status.SchedulerObservedGeneration == b.Generation
	})
	cond := scheduled(got)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != workv1alpha1.BindingReasonSuccess || cond.Message != "placed on sw-a:4, sw-b:2" {
		t.Errorf("Scheduled condition: %+v", cond)
	}
	if got.Status.SchedulingDecision == nil || len(got.Status.SchedulingDecision.Members) < 2 || got.Status.SchedulerObservedGeneration != got.Generation {
		t.Errorf("decision not recorded: %+v, observed generation %d of %d", got.Status.SchedulingDecision, got.Status.SchedulerObservedGeneration, got.Generation)
	}

	// A NoExecute taint on sw-a: the scheduler keeps its replicas there (the
	// taint manager evicts, at its rate) and says why it takes no more.
	patch := client.MergeFrom(m1.DeepCopy())
	m1.Spec.Taints = []corev1.Taint{{Key: clusterv1alpha1.TaintNotReady, Effect: corev1.TaintEffectNoExecute}}
	if err := env.Client.Patch(context.Background(), m1, patch); err != nil {
		t.Fatal(err)
	}
	row := func(b *workv1alpha1.ResourceBinding) *workv1alpha1.MemberDecision {
		if b.Status.SchedulingDecision == nil {
			return nil
		}
		for i := range b.Status.SchedulingDecision.Members {
			if b.Status.SchedulingDecision.Members[i].Name == "sw-a" {
				return &b.Status.SchedulingDecision.Members[i]
			}
		}
		return nil
	}
	got = waitFor(t, b, "sw-a held", func(b *workv1alpha1.ResourceBinding) bool {
		r := row(b)
		return r != nil && strings.Contains(r.Reason, "untolerated taint "+clusterv1alpha1.TaintNotReady+":NoExecute")
	})
	if placement(got) != "sw-a:4,sw-b:2" || !strings.HasPrefix(row(got).Reason, "keeps the replicas it holds") {
		t.Errorf("a NoExecute taint alone must not move replicas: %s, row %+v", placement(got), row(got))
	}

	// Evicted as the taint manager does: sw-a leaves spec.clusters and is
	// named in a graceful eviction task; its replicas move to sw-b.
	evict := client.MergeFrom(got.DeepCopy())
	got.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "sw-b", Replicas: 2}}
	got.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "sw-a", Reason: workv1alpha1.EvictionReasonTaintUntolerated, Producer: "test"}}
	if err := env.Client.Patch(context.Background(), got, evict); err != nil {
		t.Fatal(err)
	}
	// The placement and the decision record are two writes: read the
	// record of the decision of the current spec.
	got = waitFor(t, b, "placement sw-b:6", func(b *workv1alpha1.ResourceBinding) bool {
		return placement(b) == "sw-b:6" && b.Status.SchedulerObservedGeneration == b.Generation
	})
	if r := row(got); r == nil || r.FilteredBy == "" {
		t.Errorf("sw-a's row should say what filtered it: %+v", r)
	}
}

func TestNoMemberFitsKeepsTheBindingUnscheduledWithTheReason(t *testing.T) {
	member(t, "nf-a", "r1", "64", 1)
	b := binding(t, "nowhere", 2, &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"no-such-member"}}})
	got := waitFor(t, b, "Scheduled=False", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	cond := scheduled(got)
	if cond.Reason != workv1alpha1.BindingReasonNoClusterFit || !strings.Contains(cond.Message, "members fit") {
		t.Errorf("want NoClusterFit naming why members were dropped, got %s: %s", cond.Reason, cond.Message)
	}
	if len(got.Spec.Clusters) != 0 {
		t.Errorf("an unplaceable binding must not be placed: %v", got.Spec.Clusters)
	}
}

func TestDynamicWeightsFollowCapacityAndScaleUpAddsOnlyNewReplicas(t *testing.T) {
	// dw-a holds 10 replicas of 100m, dw-b 30.
	member(t, "dw-a", "r2", "1", 1)
	member(t, "dw-b", "r2", "3", 1)
	dynamic := &policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "r2"}}},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		},
	}
	b := binding(t, "dyn", 8, dynamic)
	got := waitFor(t, b, "placement dw-a:2,dw-b:6", func(b *workv1alpha1.ResourceBinding) bool { return placement(b) == "dw-a:2,dw-b:6" })

	// Scale 8 → 9: the existing 8 stay, one replica is added.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Replicas = 9
	if err := env.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, b, "9 replicas placed", func(b *workv1alpha1.ResourceBinding) bool {
		return b.Status.SchedulerObservedGeneration == b.Generation && sum(b) == 9
	})
	for _, c := range got.Spec.Clusters {
		if (c.Name == "dw-a" && c.Replicas < 2) || (c.Name == "dw-b" && c.Replicas < 6) {
			t.Errorf("scale-up moved existing replicas: %s", placement(got))
		}
	}

	// 60 replicas do not fit in 40: Unschedulable with each member's capacity.
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Replicas = 60
	if err := env.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, b, "Unschedulable", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Reason == workv1alpha1.BindingReasonUnschedulable
	})
	if msg := scheduled(got).Message; !strings.Contains(msg, "dw-a") || !strings.Contains(msg, "dw-b") {
		t.Errorf("Unschedulable message should name each member's capacity: %s", msg)
	}
	if sum(got) != 9 {
		t.Errorf("the placement in force must stay while the new one cannot be made; have %s", placement(got))
	}
}

func sum(b *workv1alpha1.ResourceBinding) int32 {
	var n int32
	for _, c := range b.Spec.Clusters {
		n += c.Replicas
	}
	return n
}
