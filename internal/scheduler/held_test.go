package scheduler_test

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// A member the binding already runs on that would not be chosen anew (not
// Ready, cordoned, an untolerated NoSchedule or NoExecute taint) keeps the
// replicas it holds and takes no more: only eviction (the taint manager, rate
// limited and after tolerationSeconds) moves them away.
func TestAHeldMemberKeepsItsReplicasAndTakesNoMore(t *testing.T) {
	unreachable := clusterv1alpha1.TaintUnreachable
	tests := []struct {
		name     string
		b        clusterv1alpha1.MemberCluster
		replicas int32
		current  string
		want     string
	}{
		{"not Ready: keeps 2 of 6", st.Member("b", st.NotReady("Unreachable")), 6, "a:2 b:2 c:2", "a:2 b:2 c:2"},
		{"not Ready: a scale-up goes to the others", st.Member("b", st.NotReady("Unreachable")), 10, "a:2 b:2 c:2", "a:4 b:2 c:4"},
		{"not Ready: a scale-down may take from it", st.Member("b", st.NotReady("Unreachable")), 3, "a:2 b:2 c:2", "a:1 b:1 c:1"},
		{"NoSchedule: keeps its replicas", st.Member("b", st.Taint(unreachable, "", corev1.TaintEffectNoSchedule)), 9, "a:2 b:2 c:2", "a:4 b:2 c:3"},
		{"NoExecute: keeps them until evicted", st.Member("b", st.Taint(unreachable, "", corev1.TaintEffectNoExecute)), 6, "a:2 b:2 c:2", "a:2 b:2 c:2"},
		{"cordoned: keeps its replicas", st.Member("b", st.Cordoned()), 6, "a:2 b:2 c:2", "a:2 b:2 c:2"},
		{"not held when the binding does not run there", st.Member("b", st.NotReady("Unreachable")), 6, "a:3 c:3", "a:3 c:3"},
		{"deleting: not held, its replicas move", st.Member("b", st.Deleting()), 6, "a:2 b:2 c:2", "a:3 c:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := deployment(tt.replicas, equalWeights())
			in.Current = parsePlacement(tt.current)
			res := mustSchedule(t, st.Snapshot(t, st.Member("a"), tt.b, st.Member("c")), in)
			if got := placed(res.Clusters); got != tt.want {
				t.Errorf("placement = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAHeldMemberIsExplainedAsKeepingItsReplicas(t *testing.T) {
	in := deployment(6, equalWeights())
	in.Current = parsePlacement("a:3 b:3")
	res := mustSchedule(t, st.Snapshot(t, st.Member("a"), st.Member("b", st.NotReady("Unreachable"))), in)
	for _, row := range res.Explanation.Members() {
		if row.Name != "b" {
			continue
		}
		if row.FilteredBy != "" || !row.Selected || row.Replicas != 3 || row.Reason != "keeps the replicas it holds, takes no more: not Ready (Ready=False, Unreachable)" {
			t.Errorf("row of b = %+v", row)
		}
		return
	}
	t.Fatal("no row for b")
}

func TestEvictionMovesAHeldMembersReplicas(t *testing.T) {
	// The taint manager removed b from spec.clusters and named it in a
	// graceful eviction task: its replicas go to the others.
	in := deployment(6, equalWeights())
	in.Current = parsePlacement("a:3")
	in.EvictedFrom = []string{"b"}
	res, err := scheduler.New().Schedule(st.Snapshot(t, st.Member("a"), st.Member("b", st.Taint(clusterv1alpha1.TaintUnreachable, "", corev1.TaintEffectNoExecute)), st.Member("c")), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := placed(res.Clusters); got != "a:3 c:3" {
		t.Errorf("placement = %q, want a:3 c:3", got)
	}
}

// parsePlacement reads "a:3 b:2" into a placement.
func parsePlacement(s string) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for _, f := range strings.Fields(s) {
		name, n, _ := strings.Cut(f, ":")
		r, _ := strconv.Atoi(n)
		out = append(out, workv1alpha1.TargetCluster{Name: name, Replicas: int32(r)})
	}
	return out
}

// A rolling outage can leave a binding evicted from every member in turn,
// placed on none, its last copies kept by graceful eviction until a
// replacement is healthy. Members that are fit again take it back (their
// copies still run there); one still tainted NoExecute does not.
func TestEvictedFromEveryMemberItGoesBackToThoseFitAgain(t *testing.T) {
	in := deployment(6, equalWeights())
	in.EvictedFrom = []string{"a", "b", "c"}
	res, err := scheduler.New().Schedule(st.Snapshot(t, st.Member("a"), st.Member("b"), st.Member("c", st.Taint(clusterv1alpha1.TaintUnreachable, "", corev1.TaintEffectNoExecute))), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := placed(res.Clusters); got != "a:3 b:3" {
		t.Errorf("placement = %q, want a:3 b:3 (c still NoExecute)", got)
	}
	// While another member can take it, the members it leaves stay out.
	in.EvictedFrom = []string{"a", "b"}
	res, err = scheduler.New().Schedule(st.Snapshot(t, st.Member("a"), st.Member("b"), st.Member("c")), in)
	if err != nil {
		t.Fatal(err)
	}
	if got := placed(res.Clusters); got != "c:6" {
		t.Errorf("placement = %q, want c:6", got)
	}
}
