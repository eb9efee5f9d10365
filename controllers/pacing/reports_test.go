package pacing

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// Reports remembers an object only while a report of it can still be held
// back: written once each, 100,000 objects over 100 s leave in memory
// about those of the last interval, not all of them.
func TestReportsForgetWhatCanNoLongerWait(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	r := &Reports{Interval: 500 * time.Millisecond, Clock: clk}
	for i := range 100000 {
		r.Written(types.NamespacedName{Namespace: "fleet", Name: fmt.Sprint(i)})
		clk.Step(time.Millisecond)
	}
	if n := r.written.Len(); n > 4*1024 {
		t.Errorf("%d objects remembered, want at most a few intervals' worth (500 written per interval)", n)
	}
	if wait := r.Wait(types.NamespacedName{Namespace: "fleet", Name: "99999"}); wait != 499*time.Millisecond {
		t.Errorf("the last object written 1ms ago waits %s, want 499ms", wait)
	}
	if wait := r.Wait(types.NamespacedName{Namespace: "fleet", Name: "0"}); wait != 0 {
		t.Errorf("an object written 100s ago waits %s, want 0", wait)
	}
}
