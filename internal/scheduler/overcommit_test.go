package scheduler_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// at is a clock stopped a minute after the models were observed.
func at(offset time.Duration) scheduler.Option {
	return scheduler.WithClock(func() time.Time { return st.ModelTime.Add(offset) })
}

func TestBackToBackBindingsDoNotOvercommitASnapshot(t *testing.T) {
	capacity := map[string]int{"a": 10, "b": 12, "c": 8}
	snap := st.Snapshot(t, cpus("a", "10"), cpus("b", "12"), cpus("c", "8"))
	s := scheduler.New(at(time.Minute))

	used := map[string]int{}
	scheduled, unschedulable := 0, 0
	for i := range 50 {
		in := deployment(1, aggregated())
		in.Key = fmt.Sprintf("shop/web-%02d", i)
		res, err := s.Schedule(snap, in)
		switch scheduler.ReasonOf(err) {
		case "Success":
			scheduled++
			for _, tc := range res.Clusters {
				used[tc.Name] += int(tc.Replicas)
			}
		case "Unschedulable":
			unschedulable++
		default:
			t.Fatalf("binding %d: %v", i, err)
		}
	}
	for name, n := range used {
		if n > capacity[name] {
			t.Errorf("member %s holds %d replicas, capacity %d", name, n, capacity[name])
		}
	}
	if len(used) != 3 {
		t.Errorf("bindings landed on %v, want all three members used", used)
	}
	if scheduled != 30 || unschedulable != 20 {
		t.Errorf("scheduled %d, unschedulable %d; want 30 and 20 (the fleet holds 30)", scheduled, unschedulable)
	}
}

func TestWithoutTheLedgerBackToBackBindingsAllLandOnTheSameMember(t *testing.T) {
	// The control for the test above: Preview writes no ledger entries, so
	// every decision sees the same free capacity.
	snap := st.Snapshot(t, cpus("a", "10"), cpus("b", "12"), cpus("c", "8"))
	s := scheduler.New()
	for i := range 50 {
		in := deployment(1, aggregated())
		in.Key = fmt.Sprintf("shop/web-%02d", i)
		res, err := s.Preview(snap, in)
		if err != nil || placed(res.Clusters) != "b:1" {
			t.Fatalf("binding %d previewed %q, %v; want b:1 every time", i, placed(res.Clusters), err)
		}
	}
}

func TestAssumedCapacityIsReleasedOnceTheMembersModelIsNewer(t *testing.T) {
	s := scheduler.New(at(time.Minute))
	first := deployment(8, aggregated())
	first.Key = "shop/first"
	if _, err := s.Schedule(st.Snapshot(t, cpus("a", "10")), first); err != nil {
		t.Fatalf("first: %v", err)
	}

	second := deployment(3, aggregated())
	second.Key = "shop/second"
	_, err := s.Schedule(st.Snapshot(t, cpus("a", "10")), second)
	if scheduler.ReasonOf(err) != "Unschedulable" {
		t.Fatalf("against the old model: err = %v, want Unschedulable (8 of 10 assumed)", err)
	}

	// The estimator has seen the 8 Pods: 2 CPU free, observed after the assignment.
	seen := st.Snapshot(t, cpus("a", "2", st.ObservedAt(st.ModelTime.Add(2*time.Minute))))
	second.Replicas = 2
	if _, err := s.Schedule(seen, second); err != nil {
		t.Fatalf("against the newer model: %v (assumed replicas must not count twice)", err)
	}
}

func TestReschedulingABindingDoesNotCountItsOwnAssumedReplicasTwice(t *testing.T) {
	s := scheduler.New(at(time.Minute))
	snap := st.Snapshot(t, cpus("a", "10"))
	in := deployment(8, aggregated())
	if _, err := s.Schedule(snap, in); err != nil {
		t.Fatalf("first decision: %v", err)
	}
	in.Replicas, in.Current = 10, current("a", 8)
	res, err := s.Schedule(snap, in)
	if err != nil || placed(res.Clusters) != "a:10" {
		t.Fatalf("scale-up to 10 on a 10-CPU member gave %q, %v; want a:10", placed(res.Clusters), err)
	}
	if got := s.Ledger().Entries("a"); len(got) != 1 || got[0].Replicas != 10 {
		t.Errorf("ledger on a = %+v, want one entry of 10 replicas", got)
	}
}

func TestForgettingABindingReleasesItsCapacity(t *testing.T) {
	s := scheduler.New(at(time.Minute))
	snap := st.Snapshot(t, cpus("a", "10"))
	in := deployment(10, aggregated())
	if _, err := s.Schedule(snap, in); err != nil {
		t.Fatalf("first: %v", err)
	}
	other := deployment(10, aggregated())
	other.Key = "shop/other"
	if _, err := s.Schedule(snap, other); scheduler.ReasonOf(err) != "Unschedulable" {
		t.Fatalf("err = %v, want Unschedulable while the first binding holds the member", err)
	}
	s.Forget(in.Key)
	if _, err := s.Schedule(snap, other); err != nil {
		t.Fatalf("after Forget: %v", err)
	}
}

func TestPreviewWritesNothing(t *testing.T) {
	s := scheduler.New(at(time.Minute))
	snap := st.Snapshot(t, cpus("a", "10"))
	res, err := s.Preview(snap, deployment(10, aggregated()))
	if err != nil || placed(res.Clusters) != "a:10" {
		t.Fatalf("preview %q, %v; want a:10", placed(res.Clusters), err)
	}
	if got := s.Ledger().Entries("a"); len(got) != 0 {
		t.Errorf("ledger after Preview = %+v, want empty", got)
	}
}

func TestConcurrentDecisionsStillNeverOvercommit(t *testing.T) {
	capacity := map[string]int{"a": 10, "b": 12, "c": 8}
	snap := st.Snapshot(t, cpus("a", "10"), cpus("b", "12"), cpus("c", "8"))
	s := scheduler.New(at(time.Minute))

	var mu sync.Mutex
	used := map[string]int{}
	scheduled := 0
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 15 {
				in := deployment(1, aggregated())
				in.Key = fmt.Sprintf("shop/web-%d-%02d", g, i)
				if _, err := s.Preview(snap, in); err != nil && scheduler.ReasonOf(err) != "Unschedulable" {
					t.Errorf("preview: %v", err)
				}
				res, err := s.Schedule(snap, in)
				if err != nil {
					continue
				}
				mu.Lock()
				scheduled++
				for _, tc := range res.Clusters {
					used[tc.Name] += int(tc.Replicas)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for name, n := range used {
		if n > capacity[name] {
			t.Errorf("member %s holds %d replicas, capacity %d", name, n, capacity[name])
		}
	}
	if scheduled != 30 {
		t.Errorf("scheduled %d of 60, want 30 (the fleet holds 30)", scheduled)
	}
}
