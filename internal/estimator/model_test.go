package estimator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type nodeOpt func(*corev1.Node)

func mkNode(name, cpu, mem string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, "pool": "worker"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func notReady(n *corev1.Node)   { n.Status.Conditions[0].Status = corev1.ConditionFalse }
func cordoned(n *corev1.Node)   { n.Spec.Unschedulable = true }
func label(k, v string) nodeOpt { return func(n *corev1.Node) { n.Labels[k] = v } }
func taint(t corev1.Taint) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, t) }
}

func mkPod(nodeName, cpu, mem string, phase corev1.PodPhase) *corev1.Pod {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return &corev1.Pod{
		Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// equalLists compares quantities by value, not by notation.
func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestBuildGroupsIdenticalNodesAndDropsPerNodeLabels(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a", "4", "16Gi"), mkNode("b", "4", "16Gi"), mkNode("c", "4", "16Gi", label("pool", "gpu"))}
	got := Build(nodes, nil, now, DefaultOptions())

	want := []clusterv1alpha1.NodeGroup{
		{Count: 1, Labels: map[string]string{"pool": "gpu"}, Free: rl("cpu", "4", "memory", "16Gi", "pods", "110")},
		{Count: 2, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "4", "memory", "16Gi", "pods", "110")},
	}
	assertGroups(t, got.Model.NodeGroups, want)
	if !got.Model.ObservedTime.Time.Equal(now) {
		t.Errorf("ObservedTime = %v, want %v", got.Model.ObservedTime, now)
	}
}

func TestBuildCountsOnlyReadySchedulableNodes(t *testing.T) {
	nodes := []*corev1.Node{mkNode("ready", "4", "8Gi"), mkNode("down", "4", "8Gi", notReady), mkNode("cordoned", "4", "8Gi", cordoned)}
	got := Build(nodes, nil, now, DefaultOptions())

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{
		{Count: 1, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "4", "memory", "8Gi", "pods", "110")},
	})
	if got.NodeSummary != (clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 2}) {
		t.Errorf("NodeSummary = %+v, want total 3, ready 2", got.NodeSummary)
	}
	if !equalLists(got.ResourceSummary.Allocatable, rl("cpu", "4", "memory", "8Gi", "pods", "110")) {
		t.Errorf("Allocatable = %v, want only the schedulable node's", got.ResourceSummary.Allocatable)
	}
}

func TestBuildSubtractsRequestsOfNonTerminalBoundPods(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a", "4", "8Gi")}
	pods := []*corev1.Pod{
		mkPod("a", "1", "1Gi", corev1.PodRunning),
		mkPod("a", "500m", "", corev1.PodPending),
		mkPod("a", "2", "2Gi", corev1.PodSucceeded), // terminal: frees its requests
		mkPod("a", "2", "2Gi", corev1.PodFailed),
		mkPod("", "3", "3Gi", corev1.PodPending), // not bound: allocating, not used
		mkPod("gone", "1", "1Gi", corev1.PodRunning),
	}
	got := Build(nodes, pods, now, DefaultOptions())

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{
		{Count: 1, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "2500m", "memory", "7Gi", "pods", "108")},
	})
	if got.Model.ObservedPods != 4 {
		t.Errorf("ObservedPods = %d, want 4 non-terminal pods", got.Model.ObservedPods)
	}
	if !equalLists(got.ResourceSummary.Allocated, rl("cpu", "1500m", "memory", "1Gi")) {
		t.Errorf("Allocated = %v, want 1500m cpu, 1Gi memory", got.ResourceSummary.Allocated)
	}
	if !equalLists(got.ResourceSummary.Allocating, rl("cpu", "3", "memory", "3Gi")) {
		t.Errorf("Allocating = %v, want 3 cpu, 3Gi memory", got.ResourceSummary.Allocating)
	}
}

func TestBuildUsesTheSchedulersEffectiveRequests(t *testing.T) {
	// An init container larger than the app containers, and pod overhead:
	// the scheduler reserves max(init, sum(app)) + overhead = 2 + 250m CPU.
	p := mkPod("a", "1", "", corev1.PodRunning)
	p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2")}}}
	p.Spec.Overhead = rl("cpu", "250m")
	got := Build([]*corev1.Node{mkNode("a", "4", "8Gi")}, []*corev1.Pod{p}, now, DefaultOptions())

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{
		{Count: 1, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "1750m", "memory", "8Gi", "pods", "109")},
	})
}

func TestBuildRoundsFreeDownToTheQuantum(t *testing.T) {
	// 3999m and 3991m CPU free, 8Gi-1 and 8Gi-1Mi+1 bytes memory free: both
	// round down to 3990m and 8191Mi and share a group.
	nodes := []*corev1.Node{mkNode("a", "3999m", "8589934591"), mkNode("b", "3991m", "8588886017")}
	got := Build(nodes, nil, now, DefaultOptions())

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{
		{Count: 2, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "3990m", "memory", "8191Mi", "pods", "110")},
	})
}

func TestBuildKeepsOnlyRepellingTaintsWithoutTimestamps(t *testing.T) {
	t1, t2 := metav1.NewTime(now), metav1.NewTime(now.Add(time.Hour))
	nodes := []*corev1.Node{
		mkNode("a", "4", "8Gi", taint(corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}), taint(corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t1})),
		mkNode("b", "4", "8Gi", taint(corev1.Taint{Key: "drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t2}), taint(corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}), taint(corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})),
	}
	got := Build(nodes, nil, now, DefaultOptions())

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{{
		Count: 2, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "4", "memory", "8Gi", "pods", "110"),
		Taints: []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}, {Key: "gpu", Effect: corev1.TaintEffectNoSchedule}},
	}})
}

func TestBuildDoublesQuantaUntilTheModelFitsMaxGroups(t *testing.T) {
	// Eight nodes of the same pool whose free CPU differs by 100m: eight
	// groups at 10m. With at most 2 groups the CPU quantum grows to 640m.
	var nodes []*corev1.Node
	for i := range 8 {
		nodes = append(nodes, mkNode(string(rune('a'+i)), resource.NewMilliQuantity(int64(1000+100*i), resource.DecimalSI).String(), "8Gi"))
	}
	opts := DefaultOptions()
	opts.MaxGroups = 2
	got := Build(nodes, nil, now, opts)

	assertGroups(t, got.Model.NodeGroups, []clusterv1alpha1.NodeGroup{
		{Count: 5, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "1280m", "memory", "8Gi", "pods", "110")},
		{Count: 3, Labels: map[string]string{"pool": "worker"}, Free: rl("cpu", "640m", "memory", "8Gi", "pods", "110")},
	})
	if q := got.Quanta[corev1.ResourceCPU]; q.MilliValue() != 640 {
		t.Errorf("cpu quantum = %s, want 640m", q.String())
	}
}

func TestBuildDoesNotCoarsenWhenLabelsAloneExceedMaxGroups(t *testing.T) {
	// Three zones can never share a group: coarsening would only destroy
	// capacity information, so the model keeps the base quanta.
	nodes := []*corev1.Node{mkNode("a", "4", "8Gi", label("zone", "a")), mkNode("b", "3", "8Gi", label("zone", "a")), mkNode("c", "4", "8Gi", label("zone", "b")), mkNode("d", "4", "8Gi", label("zone", "c"))}
	opts := DefaultOptions()
	opts.MaxGroups = 2
	got := Build(nodes, nil, now, opts)

	if len(got.Model.NodeGroups) != 4 {
		t.Fatalf("got %d groups, want 4 (two shapes in zone a, one in b and c)", len(got.Model.NodeGroups))
	}
	if q := got.Quanta[corev1.ResourceCPU]; q.MilliValue() != 10 {
		t.Errorf("cpu quantum = %s, want the base 10m", q.String())
	}
}

func assertGroups(t *testing.T, got, want []clusterv1alpha1.NodeGroup) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d groups %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Count != w.Count || !equalLabels(g.Labels, w.Labels) || !equalLists(g.Free, w.Free) || !equalTaints(g.Taints, w.Taints) {
			t.Errorf("group %d = {count %d labels %v taints %v free %v}, want {count %d labels %v taints %v free %v}",
				i, g.Count, g.Labels, g.Taints, g.Free, w.Count, w.Labels, w.Taints, w.Free)
		}
	}
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func equalTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect || a[i].TimeAdded != nil {
			return false
		}
	}
	return true
}

func TestBuildCountsBoundPodsPerNamespace(t *testing.T) {
	nodes := []*corev1.Node{mkNode("a", "4", "8Gi"), mkNode("c", "4", "8Gi", cordoned)}
	in := func(ns string, p *corev1.Pod) *corev1.Pod { p.Namespace = ns; return p }
	pods := []*corev1.Pod{
		in("shop", mkPod("a", "100m", "", corev1.PodRunning)),
		in("shop", mkPod("a", "100m", "", corev1.PodPending)),   // bound, not yet running: counted
		in("shop", mkPod("c", "100m", "", corev1.PodRunning)),   // on a cordoned node: still its Pod
		in("shop", mkPod("", "100m", "", corev1.PodPending)),    // not bound: not counted
		in("shop", mkPod("a", "100m", "", corev1.PodSucceeded)), // terminal: not counted
		in("web", mkPod("a", "100m", "", corev1.PodRunning)),
	}
	got := Build(nodes, pods, now, DefaultOptions()).Model.BoundPods
	if len(got) != 2 || got["shop"] != 3 || got["web"] != 1 {
		t.Errorf("BoundPods = %v, want shop:3 web:1", got)
	}
	if empty := Build(nodes, nil, now, DefaultOptions()).Model.BoundPods; empty != nil {
		t.Errorf("BoundPods without Pods = %v, want none", empty)
	}
}

func TestBoundPodsKeepsTheLargestNamespacesPastTheBound(t *testing.T) {
	counts := map[string]int32{"a": 1, "b": 5, "c": 3, "d": 3}
	if got := largest(counts, 2); len(got) != 2 || got["b"] != 5 || got["c"] != 3 {
		t.Errorf("largest 2 = %v, want b:5 c:3 (ties by name)", got)
	}
	if got := largest(counts, 10); len(got) != 4 {
		t.Errorf("largest 10 of 4 = %v, want all", got)
	}
}
