package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

const propertyIterations = 1500

// randomFleet is 1-12 members, some unhealthy, tainted, without a model or a rack label.
func randomFleet(r *rand.Rand) []clusterv1alpha1.MemberCluster {
	n := 1 + r.IntN(12)
	fleet := make([]clusterv1alpha1.MemberCluster, n)
	for i := range fleet {
		opts := []st.Option{st.Region(fmt.Sprintf("r%d", r.IntN(3))), st.Zone(fmt.Sprintf("z%d", r.IntN(4)))}
		if r.IntN(4) > 0 {
			opts = append(opts, st.Labels(rack, fmt.Sprintf("rack-%d", r.IntN(3))))
		}
		if r.IntN(5) > 0 {
			opts = append(opts, st.Nodes(int32(1+r.IntN(3)), "cpu", fmt.Sprint(r.IntN(9))))
			if r.IntN(3) == 0 {
				opts = append(opts, st.Nodes(1, "cpu", fmt.Sprint(r.IntN(5)), "memory", "1Gi"))
			}
		}
		switch r.IntN(10) {
		case 0:
			opts = append(opts, st.NotReady("Unreachable"))
		case 1:
			opts = append(opts, st.Taint("cluster.flotilla.io/unreachable", "", corev1.TaintEffectNoExecute))
		}
		fleet[i] = st.Member(fmt.Sprintf("m%02d", i), opts...)
	}
	return fleet
}

// randomPlacement is a Divided placement, sometimes with spread constraints
// or an affinity. spread is false when the test needs plain division.
func randomPlacement(r *rand.Rand, n int, withSpread bool) *policyv1alpha1.Placement {
	var p *policyv1alpha1.Placement
	switch r.IntN(4) {
	case 0:
		p = equalWeights()
	case 1:
		var pairs []any
		for i := range n {
			if r.IntN(4) > 0 {
				pairs = append(pairs, fmt.Sprintf("m%02d", i), 1+r.IntN(5))
			}
		}
		p = staticWeights(pairs...)
	case 2:
		p = dynamicWeights()
	default:
		p = aggregated()
	}
	if r.IntN(4) == 0 {
		p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{ExcludeClusters: []string{fmt.Sprintf("m%02d", r.IntN(n))}}
	}
	if withSpread && r.IntN(2) == 0 {
		switch r.IntN(3) {
		case 0:
			p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{byField("region", 1+r.IntN(2), 2+r.IntN(2)), byField("cluster", 1, r.IntN(6))}
		case 1:
			minGroups := r.IntN(3)
			p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{byLabel(rack, minGroups, r.IntN(2)*(minGroups+r.IntN(2)))}
		default:
			minGroups := r.IntN(3)
			p.SpreadConstraints = []policyv1alpha1.SpreadConstraint{byField("cluster", minGroups, r.IntN(2)*(minGroups+r.IntN(3)))}
		}
	}
	return p
}

func sumOf(tcs []workv1alpha1.TargetCluster) int32 {
	var s int32
	for _, tc := range tcs {
		s += tc.Replicas
	}
	return s
}

// fits is how many 1-CPU replicas each member's model holds.
func fits(fleet []clusterv1alpha1.MemberCluster) map[string]int64 {
	out := map[string]int64{}
	oneCPU := deployment(1, nil).Requirements
	for i := range fleet {
		if cm := fleet[i].Status.CapacityModel; cm != nil {
			out[fleet[i].Name] = capacity.Fit(cm, oneCPU)
		}
	}
	return out
}

func TestPropertyDividedSumsToReplicasWithinCapacity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	succeeded := 0
	for it := range propertyIterations {
		fleet := randomFleet(r)
		in := deployment(int32(1+r.IntN(30)), randomPlacement(r, len(fleet), true))
		res, err := scheduler.Preview(st.Snapshot(t, fleet...), in)
		if err != nil {
			if reason := scheduler.ReasonOf(err); reason != "NoClusterFit" && reason != "Unschedulable" {
				t.Fatalf("#%d: unexpected failure %v", it, err)
			}
			continue
		}
		succeeded++
		if got := sumOf(res.Clusters); got != in.Replicas {
			t.Fatalf("#%d: placed %d replicas (%s), want %d", it, got, placed(res.Clusters), in.Replicas)
		}
		room := fits(fleet)
		for _, tc := range res.Clusters {
			if c, known := room[tc.Name]; known && int64(tc.Replicas) > c {
				t.Fatalf("#%d: %s got %d replicas, holds %d", it, tc.Name, tc.Replicas, c)
			}
		}
	}
	if succeeded < propertyIterations/3 {
		t.Fatalf("only %d of %d random cases placed: the generator tests too little", succeeded, propertyIterations)
	}
}

func TestPropertySameInputSameOutputWhateverTheMemberOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for it := range propertyIterations {
		fleet := randomFleet(r)
		in := deployment(int32(r.IntN(30)), randomPlacement(r, len(fleet), true))
		first, err1 := scheduler.Preview(st.Snapshot(t, fleet...), in)
		shuffled := append([]clusterv1alpha1.MemberCluster(nil), fleet...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		second, err2 := scheduler.Preview(st.Snapshot(t, shuffled...), in)
		if fmt.Sprint(err1) != fmt.Sprint(err2) || placed(first.Clusters) != placed(second.Clusters) {
			t.Fatalf("#%d: %q (%v) in order, %q (%v) shuffled", it, placed(first.Clusters), err1, placed(second.Clusters), err2)
		}
	}
}

func moves(before, after []workv1alpha1.TargetCluster) int32 {
	held := map[string]int32{}
	for _, tc := range before {
		held[tc.Name] += tc.Replicas
	}
	for _, tc := range after {
		held[tc.Name] -= tc.Replicas
	}
	var n int32
	for _, d := range held {
		n += max(d, -d)
	}
	return n
}

func TestPropertyScaleUpThenDownMovesAtMostOneReplicaPerStep(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	checked := 0
	for it := range propertyIterations {
		fleet := randomFleet(r)
		snap := st.Snapshot(t, fleet...)
		in := deployment(int32(1+r.IntN(25)), randomPlacement(r, len(fleet), false))
		start, err := scheduler.Preview(snap, in)
		if err != nil {
			continue
		}
		in.Current, in.Replicas = start.Clusters, in.Replicas+1
		up, err := scheduler.Preview(snap, in)
		if err != nil {
			continue
		}
		in.Current, in.Replicas = up.Clusters, in.Replicas-1
		down, err := scheduler.Preview(snap, in)
		if err != nil {
			t.Fatalf("#%d: scale back down failed: %v", it, err)
		}
		checked++
		if moves(start.Clusters, up.Clusters) > 1 || moves(up.Clusters, down.Clusters) > 1 {
			t.Fatalf("#%d: %q -> %q -> %q moves more than one replica per step", it, placed(start.Clusters), placed(up.Clusters), placed(down.Clusters))
		}
	}
	if checked < propertyIterations/3 {
		t.Fatalf("only %d of %d cases scaled: the generator tests too little", checked, propertyIterations)
	}
}

func TestPropertyBackToBackBindingsNeverExceedCapacity(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for it := range 100 {
		fleet := randomFleet(r)
		snap := st.Snapshot(t, fleet...)
		s := scheduler.New(at(0))
		used := map[string]int64{}
		for b := range 20 {
			in := deployment(int32(1+r.IntN(8)), randomPlacement(r, len(fleet), true))
			in.Key = fmt.Sprintf("ns/b%02d", b)
			res, err := s.Schedule(snap, in)
			if err != nil {
				continue
			}
			for _, tc := range res.Clusters {
				used[tc.Name] += int64(tc.Replicas)
			}
		}
		for name, c := range fits(fleet) {
			if used[name] > c {
				t.Fatalf("#%d: %s was given %d replicas over 20 bindings, holds %d", it, name, used[name], c)
			}
		}
	}
}
