package tracker_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func render(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		if !q.IsZero() {
			parts = append(parts, string(name)+"="+q.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// cpuEach is one replica asking cpu (and nothing else).
func cpuEach(cpu string) *workv1alpha1.ReplicaRequirements {
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", cpu)}
}

func on(member string, replicas int32) []workv1alpha1.TargetCluster {
	return []workv1alpha1.TargetCluster{{Name: member, Replicas: replicas}}
}

func deployment(req *workv1alpha1.ReplicaRequirements, clusters []workv1alpha1.TargetCluster) quota.Workload {
	return quota.Workload{APIVersion: "apps/v1", Kind: "Deployment", Requirements: req, Clusters: clusters}
}

// placement asks to move binding key of namespace tenant from current to clusters.
func placement(key string, req *workv1alpha1.ReplicaRequirements, current, clusters []workv1alpha1.TargetCluster) scheduler.Placement {
	return scheduler.Placement{Key: "tenant/" + key, Namespace: "tenant", APIVersion: "apps/v1", Kind: "Deployment",
		Requirements: req, Current: current, Clusters: clusters}
}

func synced() *tracker.Tracker {
	t := tracker.New(tracker.Options{})
	t.MarkSynced()
	return t
}

// envelope is a tracker with `overall: {cpu: 64}` in tenant and workloads
// totalling 60 CPU placed: a (40 × 1), b (16 × 1), c (8 × 500m).
func envelope() *tracker.Tracker {
	t := synced()
	t.SetQuota("tenant", "team", list("cpu", "64"))
	t.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), on("m1", 40)), false)
	t.ObserveBinding("tenant/b", "tenant", deployment(cpuEach("1"), on("m2", 16)), false)
	t.ObserveBinding("tenant/c", "tenant", deployment(cpuEach("500m"), on("m3", 8)), false)
	return t
}

func TestTheEnvelopeRefusesWhatWouldPassOverallNamingKeyRequestAndWhatIsLeft(t *testing.T) {
	tr := envelope()
	if got := render(tr.Used("tenant")); got != "count/deployments.apps=3 cpu=60 pods=64 requests.cpu=60" {
		t.Fatalf("used = %s", got)
	}
	err := tr.CheckPlacement(placement("d", cpuEach("1"), nil, on("m1", 8)))
	want := "FederatedResourceQuota tenant/team: cpu: requested 8, used 60 of 64, 4 left"
	var exceeded *quota.ExceededError
	if !errors.As(err, &exceeded) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if err := tr.CheckPlacement(placement("d", cpuEach("1"), nil, on("m1", 4))); err != nil {
		t.Errorf("4 CPU fit exactly in what is left: %v", err)
	}
	// The keyless check of the QuotaChecker interface says the same.
	if err := tr.CheckQuota("tenant", cpuEach("1"), 8); err == nil || err.Error() != want {
		t.Errorf("CheckQuota = %v, want %s", err, want)
	}
	if err := tr.CheckQuota("tenant", cpuEach("1"), 4); err != nil {
		t.Errorf("CheckQuota(4) = %v", err)
	}
}

func TestScaleDownsAndDeletionsAreNeverRefused(t *testing.T) {
	tr := envelope()
	tr.SetQuota("tenant", "team", list("cpu", "10")) // lowered far below use
	if err := tr.CheckPlacement(placement("a", cpuEach("1"), on("m1", 40), on("m1", 30))); err != nil {
		t.Errorf("a scale-down was refused: %v", err)
	}
	if err := tr.CheckQuota("tenant", cpuEach("1"), -10); err != nil {
		t.Errorf("a negative delta was refused: %v", err)
	}
	if err := tr.CheckPlacement(placement("a", cpuEach("1"), on("m1", 40), on("m1", 40))); err != nil {
		t.Errorf("a placement that grows nothing was refused: %v", err)
	}
	tr.Placed(placement("a", cpuEach("1"), on("m1", 40), on("m1", 44))) // decided just before its deletion
	tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), on("m1", 40)), true)
	if got := render(tr.Used("tenant")); got != "count/deployments.apps=2 cpu=20 pods=24 requests.cpu=20" {
		t.Errorf("a binding being deleted still uses quota: %s", got)
	}
}

func TestAChangeOfRequirementsIsAccountedAtTheSameReplicas(t *testing.T) {
	tr := envelope()
	// b: 16 × 1 CPU → 16 × 2 CPU asks 16 more, with 4 left.
	err := tr.CheckPlacement(placement("b", cpuEach("2"), on("m2", 16), on("m2", 16)))
	if err == nil || err.Error() != "FederatedResourceQuota tenant/team: cpu: requested 16, used 60 of 64, 4 left" {
		t.Errorf("err = %v", err)
	}
}

func TestLimitsAndMemoryKeysAreEnforcedLikeCPU(t *testing.T) {
	tr := synced()
	tr.SetQuota("tenant", "team", list("limits.cpu", "10", "requests.memory", "8Gi"))
	req := &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", "100m", "memory", "1Gi"), ResourceLimits: list("cpu", "2")}
	tr.ObserveBinding("tenant/a", "tenant", deployment(req, on("m1", 4)), false) // limits.cpu 8, memory 4Gi

	err := tr.CheckPlacement(placement("b", req, nil, on("m1", 2))) // limits.cpu +4, memory +2Gi
	if err == nil || err.Error() != "FederatedResourceQuota tenant/team: limits.cpu: requested 4, used 8 of 10, 2 left" {
		t.Errorf("limits.cpu: err = %v", err)
	}
	memOnly := &workv1alpha1.ReplicaRequirements{ResourceRequest: list("memory", "3Gi")}
	err = tr.CheckPlacement(placement("c", memOnly, nil, on("m1", 2)))
	if err == nil || err.Error() != "FederatedResourceQuota tenant/team: requests.memory: requested 6Gi, used 4Gi of 8Gi, 4Gi left" {
		t.Errorf("requests.memory: err = %v", err)
	}
	if err := tr.CheckPlacement(placement("d", memOnly, nil, on("m1", 1))); err != nil {
		t.Errorf("3Gi of 4Gi left: %v", err)
	}
}

func TestEveryQuotaOfTheNamespaceMustHold(t *testing.T) {
	tr := envelope()
	tr.SetQuota("tenant", "pods", list("pods", "66"))
	tr.SetQuota("tenant", "zz-deployments", list("count/deployments.apps", "3"))
	err := tr.CheckPlacement(placement("d", cpuEach("1"), nil, on("m1", 4)))
	want := "FederatedResourceQuota tenant/pods: pods: requested 4, used 64 of 66, 2 left; " +
		"FederatedResourceQuota tenant/zz-deployments: count/deployments.apps: requested 1, used 3 of 3, 0 left"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if err := tr.CheckPlacement(placement("d", cpuEach("1"), nil, on("m1", 4))); err == nil {
		t.Error("the check changed state")
	}
	tr.RemoveQuota("tenant", "pods")
	tr.RemoveQuota("tenant", "zz-deployments")
	if err := tr.CheckPlacement(placement("d", cpuEach("1"), nil, on("m1", 4))); err != nil {
		t.Errorf("with only team left: %v", err)
	}
	if err := tr.CheckPlacement(scheduler.Placement{Key: "other/x", Namespace: "other", Kind: "Deployment", APIVersion: "apps/v1",
		Requirements: cpuEach("1000"), Clusters: on("m1", 1000)}); err != nil {
		t.Errorf("a namespace without quota is not limited: %v", err)
	}
}

func TestAPlacementCountsFromTheDecisionUntilTheAPIServerShowsIt(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := tracker.New(tracker.Options{ReservationTTL: time.Minute, Now: func() time.Time { return now }})
	tr.MarkSynced()
	tr.SetQuota("tenant", "team", list("cpu", "64"))

	tr.Placed(placement("a", cpuEach("1"), nil, on("m1", 60)))
	if got := render(tr.Used("tenant")); !strings.Contains(got, "cpu=60 ") {
		t.Fatalf("a decision not yet written does not count: %s", got)
	}
	// The create event (nothing placed yet) does not release the reservation.
	tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), nil), false)
	if err := tr.CheckPlacement(placement("b", cpuEach("1"), nil, on("m1", 8))); err == nil {
		t.Fatal("the reservation was lost before the placement was written")
	}
	// The write confirms it: usage stays, reservation ends.
	tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), on("m1", 60)), false)
	if got := render(tr.Used("tenant")); !strings.Contains(got, "cpu=60 ") {
		t.Fatalf("used = %s", got)
	}

	// A scale-down counts only once written: until then the larger use stands.
	tr.Placed(placement("a", cpuEach("1"), on("m1", 60), on("m1", 50)))
	if got := render(tr.Used("tenant")); !strings.Contains(got, "cpu=60 ") {
		t.Fatalf("a scale-down counted before it was written: %s", got)
	}
	tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), on("m1", 50)), false)
	if got := render(tr.Used("tenant")); !strings.Contains(got, "cpu=50 ") {
		t.Fatalf("a written scale-down does not count: %s", got)
	}

	// A decision whose write never shows ends after the TTL.
	tr.Placed(placement("a", cpuEach("1"), on("m1", 50), on("m1", 64)))
	if err := tr.CheckPlacement(placement("b", cpuEach("1"), nil, on("m1", 1))); err == nil {
		t.Fatal("the reservation of 64 did not count")
	}
	now = now.Add(61 * time.Second)
	if err := tr.CheckPlacement(placement("b", cpuEach("1"), nil, on("m1", 14))); err != nil {
		t.Errorf("a reservation older than the TTL still counts: %v", err)
	}
}

// changes records what subscribers are told.
type changes struct {
	mu  sync.Mutex
	got []string
}

func (c *changes) record(ch tracker.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf("%s freed=%v", ch.Namespace, ch.Freed))
}

func (c *changes) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := strings.Join(c.got, "; ")
	c.got = nil
	return out
}

func TestSubscribersAreToldWhenQuotaFrees(t *testing.T) {
	tr := envelope()
	c := &changes{}
	tr.Subscribe(c.record)

	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"a binding grows: usage changes, nothing freed",
			func() { tr.ObserveBinding("tenant/c", "tenant", deployment(cpuEach("500m"), on("m3", 10)), false) }, "tenant freed=false"},
		{"the same binding again (a status update): nothing to tell",
			func() { tr.ObserveBinding("tenant/c", "tenant", deployment(cpuEach("500m"), on("m3", 10)), false) }, ""},
		{"a binding shrinks",
			func() { tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), on("m1", 36)), false) }, "tenant freed=true"},
		{"a binding starts deleting",
			func() { tr.ObserveBinding("tenant/b", "tenant", deployment(cpuEach("1"), on("m2", 16)), true) }, "tenant freed=true"},
		{"a deleted binding that used nothing more", func() { tr.ForgetBinding("tenant/b", "tenant") }, ""},
		{"a binding goes", func() { tr.ForgetBinding("tenant/c", "tenant") }, "tenant freed=true"},
		{"the quota is lowered", func() { tr.SetQuota("tenant", "team", list("cpu", "40")) }, "tenant freed=false"},
		{"the quota is unchanged (a status update)", func() { tr.SetQuota("tenant", "team", list("cpu", "40")) }, ""},
		{"the quota grows", func() { tr.SetQuota("tenant", "team", list("cpu", "48")) }, "tenant freed=true"},
		{"a key is no longer limited", func() { tr.SetQuota("tenant", "team", list("pods", "100")) }, "tenant freed=true"},
		{"the quota goes", func() { tr.RemoveQuota("tenant", "team") }, "tenant freed=true"},
		{"a namespace without quota changes",
			func() { tr.ObserveBinding("other/x", "other", deployment(cpuEach("1"), on("m1", 1)), false) }, ""},
	}
	for _, s := range steps {
		s.do()
		if got := c.take(); got != s.want {
			t.Errorf("%s: told %q, want %q", s.name, got, s.want)
		}
	}
}

func TestChecksWaitUntilTheTrackerHasSeenEverything(t *testing.T) {
	tr := tracker.New(tracker.Options{SyncTimeout: 50 * time.Millisecond})
	tr.SetQuota("tenant", "team", list("cpu", "64"))
	if err := tr.CheckPlacement(placement("a", cpuEach("1"), nil, on("m1", 1))); !errors.Is(err, tracker.ErrNotSynced) {
		t.Fatalf("before sync: err = %v, want ErrNotSynced", err)
	}

	tr = tracker.New(tracker.Options{SyncTimeout: time.Minute})
	tr.SetQuota("tenant", "team", list("cpu", "64"))
	done := make(chan error)
	go func() { done <- tr.CheckPlacement(placement("a", cpuEach("1"), nil, on("m1", 1))) }()
	select {
	case err := <-done:
		t.Fatalf("the check did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	tr.MarkSynced()
	if err := <-done; err != nil {
		t.Errorf("after sync: %v", err)
	}
}

// fleet is a scheduler with the tracker as its quota over three members
// with room for far more than any quota here.
func fleet(t *testing.T, tr *tracker.Tracker) (*scheduler.Scheduler, *scheduler.Snapshot) {
	snap := st.Snapshot(t,
		st.Member("m1", st.Nodes(1, "cpu", "1000", "pods", "1000")),
		st.Member("m2", st.Nodes(1, "cpu", "1000", "pods", "1000")),
		st.Member("m3", st.Nodes(1, "cpu", "1000", "pods", "1000")))
	return scheduler.New(scheduler.WithQuotaChecker(tr)), snap
}

func input(name string, replicas int32, cpu string) scheduler.Input {
	return scheduler.Input{
		Key: "tenant/" + name, Namespace: "tenant", APIVersion: "apps/v1", Kind: "Deployment",
		Replicas: replicas, Requirements: cpuEach(cpu),
		Placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		}},
	}
}

// race schedules the inputs from one goroutine each, released together,
// and returns how many were placed and the refusals.
func race(s *scheduler.Scheduler, snap *scheduler.Snapshot, inputs []scheduler.Input) (int, []string) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		placed   int
		refusals []string
	)
	start := make(chan struct{})
	for _, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.Schedule(snap, in)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				placed++
				return
			}
			refusals = append(refusals, scheduler.ReasonOf(err)+": "+err.(*scheduler.Error).Message)
		}()
	}
	close(start)
	wg.Wait()
	return placed, refusals
}

func TestTwoBindingsRacingForTheLastOfTheQuotaCannotBothGetIt(t *testing.T) {
	for round := range 200 {
		tr := envelope() // 4 CPU left
		s, snap := fleet(t, tr)
		placed, refusals := race(s, snap, []scheduler.Input{input("x", 4, "1"), input("y", 4, "1")})
		if placed != 1 || len(refusals) != 1 {
			t.Fatalf("round %d: %d placed, refusals %q; want exactly one of the two", round, placed, refusals)
		}
		want := "QuotaExceeded: FederatedResourceQuota tenant/team: cpu: requested 4, used 64 of 64, 0 left"
		if refusals[0] != want {
			t.Fatalf("round %d: refusal %q, want %q", round, refusals[0], want)
		}
		if got := render(tr.Used("tenant")); !strings.Contains(got, "cpu=64 ") {
			t.Fatalf("round %d: used %s, want the winner's 4 CPU counted", round, got)
		}
	}
}

func TestTwentyAtOnceAgainstAQuotaForTenPlaceExactlyTen(t *testing.T) {
	for round := range 50 {
		tr := synced()
		tr.SetQuota("tenant", "team", list("cpu", "10"))
		s, snap := fleet(t, tr)
		var inputs []scheduler.Input
		for i := range 20 {
			inputs = append(inputs, input(fmt.Sprintf("w%02d", i), 2, "500m"))
		}
		placed, refusals := race(s, snap, inputs)
		if placed != 10 || len(refusals) != 10 {
			t.Fatalf("round %d: %d placed, %d refused; want exactly 10 and 10", round, placed, len(refusals))
		}
		for _, r := range refusals {
			if r != "QuotaExceeded: FederatedResourceQuota tenant/team: cpu: requested 1, used 10 of 10, 0 left" {
				t.Fatalf("round %d: refusal %q", round, r)
			}
		}
	}
}
