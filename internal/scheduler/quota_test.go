package scheduler_test

import (
	"fmt"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// replicaQuota admits at most limit more replicas per call and records what it was asked.
type replicaQuota struct {
	limit  int64
	asked  []int64
	spaces []string
}

func (q *replicaQuota) CheckQuota(namespace string, _ *workv1alpha1.ReplicaRequirements, delta int64) error {
	q.asked = append(q.asked, delta)
	q.spaces = append(q.spaces, namespace)
	if delta > q.limit {
		return fmt.Errorf("namespace %s: %d more replicas requested, %d left in FederatedResourceQuota shop-quota", namespace, delta, q.limit)
	}
	return nil
}

func TestQuotaCheckerRefusalIsQuotaExceededAndCommitsNothing(t *testing.T) {
	q := &replicaQuota{limit: 5}
	s := scheduler.New(scheduler.WithQuotaChecker(q))
	snap := st.Snapshot(t, cpus("a", "10"), cpus("b", "10"), cpus("c", "10"))

	res, err := s.Schedule(snap, deployment(2, duplicated()))
	want := "QuotaExceeded: namespace shop: 6 more replicas requested, 5 left in FederatedResourceQuota shop-quota"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if len(q.asked) != 1 || q.asked[0] != 6 || q.spaces[0] != "shop" {
		t.Errorf("quota asked %v for %v, want 6 (2 replicas × 3 members) for shop", q.asked, q.spaces)
	}
	if len(res.Clusters) != 0 {
		t.Errorf("clusters = %v, want none on refusal", res.Clusters)
	}
	for _, m := range []string{"a", "b", "c"} {
		if got := s.Ledger().Entries(m); len(got) != 0 {
			t.Errorf("ledger on %s = %+v, want nothing committed", m, got)
		}
	}
}

func TestQuotaCheckerIsAskedOnlyForTheReplicasAdded(t *testing.T) {
	q := &replicaQuota{limit: 5}
	s := scheduler.New(scheduler.WithQuotaChecker(q))
	in := deployment(12, equalWeights())
	in.Current = current("a", 5, "b", 5)
	res, err := s.Schedule(st.Snapshot(t, cpus("a", "10"), cpus("b", "10")), in)
	if err != nil || placed(res.Clusters) != "a:6 b:6" {
		t.Fatalf("placement %q, %v; want a:6 b:6", placed(res.Clusters), err)
	}
	if len(q.asked) != 1 || q.asked[0] != 2 {
		t.Errorf("quota asked %v, want [2]", q.asked)
	}
}

// accountQuota is a BindingQuota that records what it was asked and told.
type accountQuota struct {
	refuse  bool
	checked []scheduler.Placement
	placed  []scheduler.Placement
}

func (q *accountQuota) CheckQuota(string, *workv1alpha1.ReplicaRequirements, int64) error {
	panic("a BindingQuota is asked CheckPlacement, not CheckQuota")
}

func (q *accountQuota) CheckPlacement(p scheduler.Placement) error {
	q.checked = append(q.checked, p)
	if q.refuse {
		return fmt.Errorf("FederatedResourceQuota shop/q: cpu: requested %d, used 0 of 0, 0 left", len(p.Clusters))
	}
	return nil
}

func (q *accountQuota) Placed(p scheduler.Placement) { q.placed = append(q.placed, p) }

func TestBindingQuotaIsAskedAboutTheWholePlacementAndToldOnlyWhatScheduleCommits(t *testing.T) {
	q := &accountQuota{}
	s := scheduler.New(scheduler.WithQuotaChecker(q))
	snap := st.Snapshot(t, cpus("a", "10"), cpus("b", "10"))
	in := deployment(12, equalWeights())
	in.Current = current("a", 5, "b", 5)

	if _, err := s.Preview(snap, in); err != nil {
		t.Fatal(err)
	}
	if len(q.checked) != 1 || len(q.placed) != 0 {
		t.Fatalf("Preview: checked %d, placed %d; want 1 check and nothing placed", len(q.checked), len(q.placed))
	}
	if _, err := s.Schedule(snap, in); err != nil {
		t.Fatal(err)
	}
	if len(q.placed) != 1 {
		t.Fatalf("Schedule placed %d times, want once", len(q.placed))
	}
	p := q.placed[0]
	if p.Key != "shop/web" || p.Namespace != "shop" || p.Kind != "Deployment" || p.APIVersion != "apps/v1" ||
		placed(p.Clusters) != "a:6 b:6" || placed(p.Current) != "a:5 b:5" || p.Requirements != in.Requirements {
		t.Errorf("placed %+v; want shop/web Deployment from a:5 b:5 to a:6 b:6 with the input's requirements", p)
	}

	q.refuse = true
	_, err := s.Schedule(snap, deployment(3, equalWeights()))
	if scheduler.ReasonOf(err) != workv1alpha1.BindingReasonQuotaExceeded || len(q.placed) != 1 {
		t.Errorf("refused: err %v, placed %d times; want QuotaExceeded and nothing more placed", err, len(q.placed))
	}
}
