package detector

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func key(name string) TemplateKey {
	return TemplateKey{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespace: "ns", Name: name}
}

func TestALoneTemplateWaitsTheQuietPeriodOnce(t *testing.T) {
	b := &Batching{QuietPeriod: 250 * time.Millisecond, MaxWait: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	if got := b.Wait(key("a"), t0); got != 250*time.Millisecond {
		t.Fatalf("a new template waits %s, want the quiet period 250ms", got)
	}
	if got := b.Wait(key("a"), t0.Add(100*time.Millisecond)); got != 150*time.Millisecond {
		t.Fatalf("asked again 100ms later it waits %s, want the 150ms left", got)
	}
	if got := b.Wait(key("a"), t0.Add(250*time.Millisecond)); got != 0 {
		t.Fatalf("after the quiet period it waits %s, want 0", got)
	}
	if len(b.firstSeen) != 0 {
		t.Fatalf("a template handled is still remembered: %v", b.firstSeen)
	}
}

func TestABurstWaitsUntilItEndsButNoLongerThanMaxWait(t *testing.T) {
	b := &Batching{QuietPeriod: 250 * time.Millisecond, MaxWait: time.Second}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// A template every 100 ms for 2 s: each arrival keeps the others
	// waiting a quiet period more, up to their MaxWait.
	for i := range 20 {
		if got := b.Wait(key(fmt.Sprintf("w%02d", i)), at(100*i)); got != 250*time.Millisecond {
			t.Fatalf("template %d arriving at +%dms waits %s, want 250ms", i, 100*i, got)
		}
		if i == 9 {
			if got := b.Wait(key("w00"), at(900)); got != 100*time.Millisecond {
				t.Fatalf("at +900ms the first template waits %s, want the 100ms left of its MaxWait", got)
			}
		}
		if i == 10 {
			if got := b.Wait(key("w00"), at(1000)); got != 0 {
				t.Fatalf("at +1s, its MaxWait, the first template still waits %s while others arrive", got)
			}
		}
	}
	if got := b.Wait(key("w15"), at(2000)); got != 150*time.Millisecond {
		t.Fatalf("100ms after the last arrival a template waits %s, want the 150ms left of the quiet period", got)
	}
	for _, name := range []string{"w12", "w19"} {
		if got := b.Wait(key(name), at(2150)); got != 0 {
			t.Fatalf("a quiet period after the burst %s still waits %s", name, got)
		}
	}
}

func TestAZeroOrNilBatchingHoldsNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, b := range []*Batching{nil, {}, {QuietPeriod: time.Second}, {MaxWait: time.Second}} {
		if got := b.Wait(key("a"), now); got != 0 {
			t.Fatalf("%+v holds a template %s", b, got)
		}
		b.Forget(key("a"))
	}
}

func TestAForgottenTemplateArrivesAgain(t *testing.T) {
	b := &Batching{QuietPeriod: 250 * time.Millisecond, MaxWait: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	b.Wait(key("a"), t0)
	b.Forget(key("a"))
	if got := b.Wait(key("a"), t0.Add(time.Second)); got != 250*time.Millisecond {
		t.Fatalf("a template forgotten and seen again waits %s, want a new quiet period", got)
	}
}
