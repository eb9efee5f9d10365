package plugins

import (
	"slices"
	"testing"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

func TestCapacityScoresRelativeToTheRoomiestCandidate(t *testing.T) {
	tests := []struct {
		name string
		raw  []int64
		want []int64
	}{
		{"proportional, roomiest 100", []int64{40, 10, 20}, []int64{100, 25, 50}},
		{"unknown capacity scores 0", []int64{framework.CapacityUnknown, 5}, []int64{0, 100}},
		{"no room anywhere", []int64{0, 0}, []int64{0, 0}},
		{"huge capacities do not overflow", []int64{1 << 62, 1 << 61}, []int64{100, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scores := slices.Clone(tt.raw)
			Capacity{}.NormalizeScores(nil, nil, scores)
			if !slices.Equal(scores, tt.want) {
				t.Errorf("scores = %v, want %v", scores, tt.want)
			}
		})
	}
}

func TestLocalityPrefersMembersAlreadyRunningTheBinding(t *testing.T) {
	c := &framework.Cycle{Current: map[string]int64{"a": 0}}
	if got := (Locality{}).Score(c, &framework.Member{Name: "a"}); got != framework.MaxScore {
		t.Errorf("member in the placement (even with 0 replicas) scores %d, want %d", got, framework.MaxScore)
	}
	if got := (Locality{}).Score(c, &framework.Member{Name: "b"}); got != 0 {
		t.Errorf("other member scores %d, want 0", got)
	}
}
