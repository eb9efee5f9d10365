package scheduler_test

import (
	"fmt"
	"slices"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
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

// The decision record, which builds only the rows it keeps, holds exactly
// the rows Members() gives, selected first, then the other candidates,
// then the filtered, for fleets larger than the record and every policy of
// the benchmarks.
func TestTheDecisionRecordHoldsTheExplanationsRowsInRankOrder(t *testing.T) {
	for _, p := range benchPolicies {
		for _, n := range []int{12, 300} {
			snap := st.Snapshot(t, st.BenchFleet(n)...)
			res, err := scheduler.New().Schedule(snap, benchBinding("bench/web", p.placement()))
			if err != nil {
				t.Fatalf("%s/%d: %v", p.name, n, err)
			}
			rows := res.Explanation.Members()
			var want []string
			for rank := range 3 {
				for _, r := range rows {
					if (rank == 0 && r.Selected) || (rank == 1 && !r.Selected && r.FilteredBy == "") || (rank == 2 && r.FilteredBy != "") {
						want = append(want, r.Name+"|"+r.FilteredBy+"|"+r.Reason+"|"+fmt.Sprint(r.Score, r.Scores, r.Available, r.Replicas))
					}
				}
			}
			want = want[:min(len(want), workv1alpha1.MaxDecisionMembers)]
			d := res.Decision()
			if len(d.Members) != len(want) || int(d.OmittedMembers) != max(0, n-workv1alpha1.MaxDecisionMembers) {
				t.Fatalf("%s/%d: %d rows, %d omitted; want %d rows", p.name, n, len(d.Members), d.OmittedMembers, len(want))
			}
			for i, m := range d.Members {
				got := m.Name + "|" + m.FilteredBy + "|" + m.Reason + "|" + fmt.Sprint(m.Score, m.Scores, m.AvailableReplicas, m.Replicas)
				if got != want[i] {
					t.Fatalf("%s/%d: row %d is %q, want %q", p.name, n, i, got, want[i])
				}
			}
		}
	}
}
