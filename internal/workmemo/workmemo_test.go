package workmemo

import (
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func work(uid string, generation int64) workv1alpha1.Work {
	return workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Generation: generation}}
}

func TestAValueIsDerivedOncePerGenerationAndForgottenWithItsWork(t *testing.T) {
	var m Memo[int64]
	derived := 0
	pass := func(group string, works ...workv1alpha1.Work) []int64 {
		var got []int64
		m.Each(group, works, func(w *workv1alpha1.Work) (int64, bool) {
			derived++
			return w.Generation * 10, w.UID != "volatile"
		}, func(_ *workv1alpha1.Work, v int64) { got = append(got, v) })
		return got
	}
	if got := pass("m1", work("a", 1), work("volatile", 1)); len(got) != 2 || got[0] != 10 || got[1] != 10 || derived != 2 {
		t.Fatalf("first pass: %v, %d derivations; want [10 10], 2", got, derived)
	}
	if got := pass("m1", work("a", 1), work("volatile", 1)); got[0] != 10 || derived != 3 {
		t.Fatalf("second pass: %v, %d derivations; want a remembered, the volatile one derived again (3)", got, derived)
	}
	if got := pass("m1", work("a", 2)); len(got) != 1 || got[0] != 20 || derived != 4 {
		t.Fatalf("a at generation 2: %v, %d derivations; want [20], 4", got, derived)
	}
	pass("m2", work("a", 1))
	if m.Len("m1") != 1 || m.Len("m2") != 1 {
		t.Fatalf("remembered: m1 %d, m2 %d; want 1 each (groups apart)", m.Len("m1"), m.Len("m2"))
	}
	pass("m1")
	if m.Len("m1") != 0 {
		t.Fatalf("m1 without Works: %d remembered", m.Len("m1"))
	}
}

func TestMemoIsSafeForConcurrentUse(t *testing.T) {
	var m Memo[int64]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				m.Each([]string{"m1", "m2"}[g%2], []workv1alpha1.Work{work("a", int64(i%3)), work("b", 1)},
					func(w *workv1alpha1.Work) (int64, bool) { return w.Generation, true }, func(*workv1alpha1.Work, int64) {})
			}
		}()
	}
	wg.Wait()
	if m.Len("m1") != 2 || m.Len("m2") != 2 {
		t.Fatalf("remembered: m1 %d, m2 %d; want 2 each", m.Len("m1"), m.Len("m2"))
	}
}
