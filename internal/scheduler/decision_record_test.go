package scheduler

import (
	"fmt"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The recorded decision lists selected members first, then the other
// candidates, then the filtered, each group in the explanation's order, and
// keeps at most MaxDecisionMembers rows.
func TestTheRecordedDecisionListsSelectedThenCandidatesThenFilteredUpToTheBound(t *testing.T) {
	row := func(i int) MemberExplanation {
		m := MemberExplanation{Name: fmt.Sprintf("m%03d", i)}
		switch i % 3 {
		case 0:
			m.FilteredBy, m.Reason = "ClusterAffinity", "not selected"
		case 1:
			m.Selected, m.Replicas = true, 1
		}
		return m
	}
	for _, n := range []int{7, 200} {
		rows := make([]MemberExplanation, n)
		for i := range rows {
			rows[i] = row(i)
		}
		rank := func(i int) int {
			switch {
			case rows[i].Selected:
				return 0
			case rows[i].FilteredBy == "":
				return 1
			}
			return 2
		}
		r := &Result{Explanation: Explanation{size: n, row: func(i int) MemberExplanation { return rows[i] }, rank: rank}}
		d := r.Decision()
		var want []string
		for rank := range 3 {
			for i := range n {
				if (rank == 0 && i%3 == 1) || (rank == 1 && i%3 == 2) || (rank == 2 && i%3 == 0) {
					want = append(want, rows[i].Name)
				}
			}
		}
		omitted := 0
		if len(want) > workv1alpha1.MaxDecisionMembers {
			omitted = len(want) - workv1alpha1.MaxDecisionMembers
			want = want[:workv1alpha1.MaxDecisionMembers]
		}
		if len(d.Members) != len(want) || int(d.OmittedMembers) != omitted {
			t.Fatalf("%d members: %d rows and %d omitted, want %d and %d", n, len(d.Members), d.OmittedMembers, len(want), omitted)
		}
		for i, m := range d.Members {
			if m.Name != want[i] {
				t.Fatalf("%d members: row %d is %s, want %s", n, i, m.Name, want[i])
			}
		}
	}
}
