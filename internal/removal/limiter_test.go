package removal

import (
	"fmt"
	"testing"
	"time"
)

func TestAShareOfTheMemberGoesPerWindowAndTheRestWaits(t *testing.T) {
	l := &Limiter{Share: 0.25, Burst: 2, Window: time.Minute}
	t0 := time.Unix(1000, 0)
	// 40 Works: 10 may go in a minute.
	live := 40
	var allowed int
	for i := range 40 {
		d := l.Take("m", fmt.Sprint(i), "policy p narrowed", live, t0)
		if d.Allowed {
			allowed++
			live--
			if d.Started || d.Ended {
				t.Fatalf("removal %d: started %v ended %v", i, d.Started, d.Ended)
			}
			continue
		}
		if d.Limit != 10 {
			t.Fatalf("limit %d, want 10", d.Limit)
		}
		if d.Started != (i == 10) {
			t.Fatalf("refusal %d: started %v", i, d.Started)
		}
		if d.RetryAfter != time.Minute {
			t.Fatalf("retry after %s", d.RetryAfter)
		}
	}
	if allowed != 10 {
		t.Fatalf("%d allowed at once, want 10", allowed)
	}
	if n, triggers := l.Waiting("m"); n != 30 || len(triggers) != 1 || triggers[0] != "policy p narrowed" {
		t.Fatalf("waiting %d %v", n, triggers)
	}
	// Each window later, a share of the member's size when the burst
	// started goes (10 of 40), not a share of what is left (7 of 30, then
	// 5 of 23…): the 40 go in 4 windows.
	windows := 1
	for at := t0; live > 0; windows++ {
		at = at.Add(time.Minute + time.Second)
		allowed = 0
		for i := 40 - live; i < 40; i++ {
			if l.Take("m", fmt.Sprint(i), "policy p narrowed", live, at).Allowed {
				allowed++
				live--
			}
		}
		if allowed != 10 {
			t.Fatalf("%d allowed in window %d, want 10", allowed, windows+1)
		}
	}
	if windows != 4 {
		t.Fatalf("the 40 removals took %d windows, want 4", windows)
	}
}

func TestSmallMembersAreNotPacedBelowTheBurst(t *testing.T) {
	l := &Limiter{Share: 0.1, Burst: 5, Window: time.Minute}
	now := time.Unix(1000, 0)
	for i := range 5 {
		if d := l.Take("small", fmt.Sprint(i), "t", 5-i, now); !d.Allowed {
			t.Fatalf("removal %d of 5 refused", i)
		}
	}
	if n, _ := l.Waiting("small"); n != 0 {
		t.Fatalf("%d waiting", n)
	}
}

func TestPacingEndsWithTheLastWaiter(t *testing.T) {
	l := &Limiter{Share: 0, Burst: 1, Window: time.Minute}
	now := time.Unix(1000, 0)
	if !l.Take("m", "a", "t1", 3, now).Allowed {
		t.Fatal("first removal refused")
	}
	if d := l.Take("m", "b", "t1", 2, now); d.Allowed || !d.Started {
		t.Fatalf("b: %+v", d)
	}
	if d := l.Take("m", "c", "t2", 2, now); d.Allowed || d.Started {
		t.Fatalf("c: %+v", d)
	}
	if _, triggers := l.Waiting("m"); fmt.Sprint(triggers) != "[t1 t2]" {
		t.Fatalf("triggers %v", triggers)
	}
	if l.Forget("m", "c") {
		t.Fatal("forgetting c ended pacing while b waits")
	}
	later := now.Add(2 * time.Minute)
	if d := l.Take("m", "b", "t1", 2, later); !d.Allowed || !d.Ended {
		t.Fatalf("b later: %+v", d)
	}
	if n, _ := l.Waiting("m"); n != 0 {
		t.Fatalf("%d waiting", n)
	}
	// Other members are independent.
	if !l.Take("other", "x", "t", 1, now).Allowed {
		t.Fatal("another member paced")
	}
}

func TestResumeWaitsAWindowBeforeRemovingWhereAPreviousLeaderPaced(t *testing.T) {
	l := &Limiter{Share: 0.25, Burst: 2, Window: time.Minute}
	t0 := time.Unix(1000, 0)
	if !l.Resume("m", 40, t0) {
		t.Fatal("a member the limiter does not count was not resumed")
	}
	d := l.Take("m", "w1", "policy p narrowed", 40, t0.Add(time.Second))
	if d.Allowed || d.RetryAfter != 59*time.Second || !d.Started {
		t.Fatalf("first removal after resuming: %+v, want refused for the rest of the window, pacing started", d)
	}
	if d := l.Take("m", "w1", "policy p narrowed", 40, t0.Add(time.Minute+time.Second)); !d.Allowed || !d.Ended {
		t.Fatalf("after the window: %+v, want allowed, pacing ended", d)
	}
	if l.Resume("m", 40, t0.Add(time.Minute+2*time.Second)) {
		t.Error("resumed a member with a removal in its window")
	}
	if !l.Resume("m", 40, t0.Add(3*time.Minute)) {
		t.Error("did not resume a member idle for a window")
	}
}
