package scheduler_test

import (
	"slices"
	"testing"

	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func TestExplanationShowsCandidatesFilteredScoresAndCapacity(t *testing.T) {
	snap := st.Snapshot(t,
		cpus("a", "10"),
		cpus("b", "10", st.NotReady("Unreachable")),
		cpus("c", "40"),
		st.Member("d"),
	)
	in := deployment(6, equalWeights())
	in.Current = current("a", 2)
	res := mustSchedule(t, snap, in)
	e := res.Explanation

	if e.Strategy != "Divided/StaticWeighted" {
		t.Errorf("strategy = %q", e.Strategy)
	}
	if got := e.Candidates(); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Errorf("candidates = %v, want [a c d]", got)
	}
	if !slices.Equal(e.ScorePlugins, []string{"Locality", "Capacity"}) {
		t.Errorf("score plugins = %v", e.ScorePlugins)
	}
	// a: locality 100×2 + capacity 12/40 → 30; c: capacity 100; d: unknown → 0.
	// a can hold 10 free + its own 2 = 12.
	want := []scheduler.MemberExplanation{
		{Name: "a", Score: 230, Scores: []int64{100, 30}, Available: 12, Selected: true, Replicas: 2},
		{Name: "b", FilteredBy: "MemberReady", Reason: "not Ready (Ready=False, Unreachable)", Available: 10},
		{Name: "c", Score: 100, Scores: []int64{0, 100}, Available: 40, Selected: true, Replicas: 2},
		{Name: "d", Score: 0, Scores: []int64{0, 0}, Available: -1, Selected: true, Replicas: 2},
	}
	if len(e.Members()) != len(want) {
		t.Fatalf("members = %+v", e.Members())
	}
	for i := range want {
		got := e.Members()[i]
		if got.Name != want[i].Name || got.FilteredBy != want[i].FilteredBy || got.Reason != want[i].Reason ||
			got.Score != want[i].Score || !slices.Equal(got.Scores, want[i].Scores) || got.Available != want[i].Available ||
			got.Selected != want[i].Selected || got.Replicas != want[i].Replicas {
			t.Errorf("member %s = %+v\nwant %+v", want[i].Name, got, want[i])
		}
	}
	if got := placed(res.Clusters); got != "a:2 c:2 d:2" {
		t.Errorf("placement = %q", got)
	}
}

func TestFailedDecisionStillExplains(t *testing.T) {
	snap := st.Snapshot(t, cpus("a", "1"))
	res, err := scheduler.New().Schedule(snap, deployment(5, dynamicWeights()))
	if scheduler.ReasonOf(err) != "Unschedulable" {
		t.Fatalf("err = %v", err)
	}
	row, ok := res.Explanation.Member("a")
	if !ok || row.Available != 1 || row.FilteredBy != "" || row.Selected {
		t.Errorf("a = %+v, want a candidate holding 1, not selected", row)
	}
	if len(res.Clusters) != 0 {
		t.Errorf("clusters = %v, want none", res.Clusters)
	}
}
