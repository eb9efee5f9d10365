package execution

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestAWorkTheMemberRejectsIsRetriedWithADoublingBackoffResetByANewGeneration(t *testing.T) {
	var r rejections
	a, b := types.NamespacedName{Namespace: "flotilla-es-m1", Name: "a"}, types.NamespacedName{Namespace: "flotilla-es-m1", Name: "b"}
	base := 10 * time.Second
	steps := []struct {
		key        types.NamespacedName
		generation int64
		rejected   bool
		want       time.Duration
	}{
		{a, 1, true, 10 * time.Second},
		{a, 1, true, 20 * time.Second},
		{b, 1, true, 10 * time.Second}, // each Work counts its own
		{a, 1, true, 40 * time.Second},
		{a, 1, true, 80 * time.Second},
		{a, 1, true, 160 * time.Second},
		{a, 1, true, 5 * time.Minute},
		{a, 1, true, 5 * time.Minute},
		{a, 2, true, 10 * time.Second}, // the binding rendered something new
		{a, 2, false, 10 * time.Second},
		{a, 2, true, 10 * time.Second}, // applied in between: counting starts again
	}
	for i, s := range steps {
		if got := r.retryAfter(s.key, s.generation, s.rejected, base); got != s.want {
			t.Fatalf("step %d (%s gen %d rejected %v): retry after %s, want %s", i, s.key.Name, s.generation, s.rejected, got, s.want)
		}
	}
}
