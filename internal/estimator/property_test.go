package estimator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

const gpu = corev1.ResourceName("example.com/gpu")

// cluster is a generated member: Nodes, Pods, and for each schedulable Node
// its exact free resources computed the obvious way (the reference).
type cluster struct {
	nodes []*corev1.Node
	pods  []*corev1.Pod
}

func genCluster(r *rand.Rand) cluster {
	var c cluster
	zones, pools := []string{"a", "b"}, []string{"x", "y", "z"}
	for i := range 1 + r.IntN(40) {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{
				corev1.LabelHostname: fmt.Sprintf("n%d", i), corev1.LabelTopologyZone: zones[r.IntN(2)], "pool": pools[r.IntN(3)],
			}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity([]int64{2000, 4000, 3920 + r.Int64N(80)}[r.IntN(3)], resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity([]int64{8 << 30, 16 << 30, (8 << 30) - r.Int64N(300<<20)}[r.IntN(3)], resource.BinarySI),
					corev1.ResourcePods:   *resource.NewQuantity([]int64{110, 8}[r.IntN(2)], resource.DecimalSI),
				},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
		if r.IntN(10) == 0 {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		if r.IntN(20) == 0 {
			n.Spec.Unschedulable = true
		}
		if r.IntN(4) == 0 {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
			n.Status.Allocatable[gpu] = *resource.NewQuantity(int64(1+r.IntN(4)), resource.DecimalSI)
		}
		if r.IntN(6) == 0 {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})
		}
		c.nodes = append(c.nodes, n)
	}
	for range r.IntN(120) {
		req := corev1.ResourceList{}
		if r.IntN(5) > 0 {
			req[corev1.ResourceCPU] = *resource.NewMilliQuantity(1+r.Int64N(1500), resource.DecimalSI)
		}
		if r.IntN(5) > 0 {
			req[corev1.ResourceMemory] = *resource.NewQuantity(1+r.Int64N(2<<30), resource.BinarySI)
		}
		if r.IntN(10) == 0 {
			req[gpu] = *resource.NewQuantity(1, resource.DecimalSI)
		}
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}}}
		if r.IntN(8) > 0 {
			p.Spec.NodeName = c.nodes[r.IntN(len(c.nodes))].Name
		}
		p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed}[r.IntN(5)]
		c.pods = append(c.pods, p)
	}
	return c
}

// referenceFit is the node-by-node answer: each schedulable Ready Node as a
// one-node model with its exact free resources, asked separately.
func referenceFit(c cluster, rr *workv1alpha1.ReplicaRequirements) int64 {
	var total int64
	for _, n := range c.nodes {
		if !isReady(n) || n.Spec.Unschedulable {
			continue
		}
		free := n.Status.Allocatable.DeepCopy()
		pods := int64(0)
		for _, p := range c.pods {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			pods++
			for name, q := range p.Spec.Containers[0].Resources.Requests {
				if f, ok := free[name]; ok {
					f.Sub(q)
					free[name] = f
				}
			}
		}
		pf := free[corev1.ResourcePods]
		pf.Sub(*resource.NewQuantity(pods, resource.DecimalSI))
		free[corev1.ResourcePods] = pf
		labels := map[string]string{}
		for k, v := range n.Labels {
			if k != corev1.LabelHostname {
				labels[k] = v
			}
		}
		one := &clusterv1alpha1.CapacityModel{NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Labels: labels, Taints: n.Spec.Taints, Free: free}}}
		total += capacity.Fit(one, rr)
	}
	return total
}

// genRequirement draws a replica requirement; aligned ones request multiples
// of the default quanta (10m CPU, 1Mi memory).
func genRequirement(r *rand.Rand, aligned bool) *workv1alpha1.ReplicaRequirements {
	rr := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{}}
	cpu, mem := 1+r.Int64N(2500), 1+r.Int64N(3<<30)
	if aligned {
		cpu, mem = 10*(1+r.Int64N(250)), (1<<20)*(1+r.Int64N(3<<10))
	}
	if r.IntN(6) > 0 {
		rr.ResourceRequest[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpu, resource.DecimalSI)
	}
	if r.IntN(6) > 0 {
		rr.ResourceRequest[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	claim := &workv1alpha1.NodeClaim{}
	if r.IntN(3) == 0 {
		claim.NodeSelector = map[string]string{corev1.LabelTopologyZone: []string{"a", "b"}[r.IntN(2)]}
	}
	if r.IntN(3) == 0 {
		claim.HardNodeAffinity = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"x", "z"}},
		}}}}
	}
	if r.IntN(3) == 0 {
		claim.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		if r.IntN(2) == 0 {
			rr.ResourceRequest[gpu] = *resource.NewQuantity(1, resource.DecimalSI)
		}
	}
	rr.NodeClaim = claim
	return rr
}

// TestModelFitMatchesNodeByNodeFit is the estimator's contract: over random
// clusters and requirements, the model's fit equals the node-by-node fit when
// free amounts are exact, and when they are quantised for requests that are
// multiples of the quanta; any other request, and any coarsened model, gets a
// lower bound — never more than the Nodes can take.
func TestModelFitMatchesNodeByNodeFit(t *testing.T) {
	exact := DefaultOptions()
	exact.Quanta = nil
	coarse := DefaultOptions()
	coarse.MaxGroups = 8

	r := rand.New(rand.NewPCG(1, 2))
	var compared, positive, coarsened int
	for i := range 300 {
		c := genCluster(r)
		exactModel := Build(c.nodes, c.pods, now, exact).Model
		quantised := Build(c.nodes, c.pods, now, DefaultOptions()).Model
		coarseRes := Build(c.nodes, c.pods, now, coarse)
		if q := coarseRes.Quanta[corev1.ResourceCPU]; q.MilliValue() > 10 {
			coarsened++
		}
		for j := range 20 {
			aligned := genRequirement(r, true)
			want := referenceFit(c, aligned)
			if got := capacity.Fit(&exactModel, aligned); got != want {
				t.Fatalf("cluster %d requirement %d: exact model fits %d, node by node %d", i, j, got, want)
			}
			if got := capacity.Fit(&quantised, aligned); got != want {
				t.Fatalf("cluster %d requirement %d (aligned): quantised model fits %d, node by node %d", i, j, got, want)
			}
			if got := capacity.Fit(&coarseRes.Model, aligned); got > want {
				t.Fatalf("cluster %d requirement %d: coarsened model fits %d, more than node by node %d", i, j, got, want)
			}

			any := genRequirement(r, false)
			want = referenceFit(c, any)
			if got := capacity.Fit(&exactModel, any); got != want {
				t.Fatalf("cluster %d requirement %d: exact model fits %d, node by node %d", i, j, got, want)
			}
			if got := capacity.Fit(&quantised, any); got > want {
				t.Fatalf("cluster %d requirement %d (unaligned): quantised model fits %d, more than node by node %d", i, j, got, want)
			}
			compared++
			if want > 0 {
				positive++
			}
		}
	}
	// The generator must exercise the interesting cases, or the test proves nothing.
	if positive < compared/3 || coarsened < 20 {
		t.Fatalf("weak generator: %d of %d requirements fit somewhere, %d of 300 models coarsened", positive, compared, coarsened)
	}
	t.Logf("%d requirements compared, %d with a positive fit, %d coarsened models", compared, positive, coarsened)
}

// TestModelFitIsExactForRequestsOnTheQuantumGrid checks the arithmetic the
// package doc relies on: floor(q*floor(f/q) / r) == floor(f/r) when q divides r.
func TestModelFitIsExactForRequestsOnTheQuantumGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		q := int64(1 + r.IntN(1000))
		req := q * (1 + r.Int64N(100))
		f := r.Int64N(1 << 40)
		if got, want := (f-f%q)/req, f/req; got != want {
			t.Fatalf("q=%d r=%d f=%d: quantised fit %d, exact %d", q, req, f, got, want)
		}
	}
}
