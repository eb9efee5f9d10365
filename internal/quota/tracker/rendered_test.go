package tracker_test

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// teamOf8 is a tracker with `overall: {cpu: 8}` in tenant and binding
// tenant/a placed as 2 × 1 CPU on m1 and m2 (2 CPU charged by the scheduler).
func teamOf8() *tracker.Tracker {
	tr := synced()
	tr.SetQuota("tenant", "team", list("cpu", "8"))
	tr.ObserveBinding("tenant/a", "tenant", deployment(cpuEach("1"), append(on("m1", 1), on("m2", 1)...)), false)
	return tr
}

func refusedMembers(r tracker.Rendering) string {
	var out []string
	for m, err := range r.Refused {
		out = append(out, m+": "+err.Error())
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func TestARenderingWithinWhatTheSchedulerChargedIsAdmittedAndCharged(t *testing.T) {
	tr := teamOf8()
	got, err := tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{
		{Member: "m1", Rendered: list("cpu", "1", "pods", "1")},
		{Member: "m2", Rendered: list("cpu", "1", "pods", "1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Refused) != 0 || render(got.Charged) != "cpu=2 pods=2" {
		t.Fatalf("charged %s, refused %s; want cpu=2 pods=2, none", render(got.Charged), refusedMembers(got))
	}
	if used := render(tr.Used("tenant")); !strings.HasPrefix(used, "count/deployments.apps=1 cpu=2 ") {
		t.Errorf("used %s, want cpu=2", used)
	}
}

func TestAnOverrideRaisingOneMemberPastTheQuotaRefusesThatMemberOnly(t *testing.T) {
	tr := teamOf8()
	// m2's override asks 9 CPU: with m1's 1, 10 of 8.
	got, err := tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{
		{Member: "m1", Rendered: list("cpu", "1")},
		{Member: "m2", Rendered: list("cpu", "9")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "m2: FederatedResourceQuota tenant/team: cpu: requested 8, used 2 of 8, 6 left"
	if refusedMembers(got) != want {
		t.Errorf("refused %q, want %q", refusedMembers(got), want)
	}
	var exceeded *quota.ExceededError
	if !errors.As(got.Refused["m2"], &exceeded) {
		t.Errorf("refusal is %T, want *quota.ExceededError", got.Refused["m2"])
	}
	if render(got.Charged) != "cpu=1" {
		t.Errorf("charged %s, want m1's cpu=1 only (m2 has no Work yet)", render(got.Charged))
	}
	if used := tr.Used("tenant")[corev1.ResourceCPU]; used.String() != "2" {
		t.Errorf("used cpu %s, want the scheduler's 2", used.String())
	}
}

func TestARefusedMemberKeepsCountingTheWorkItHas(t *testing.T) {
	tr := teamOf8()
	got, _ := tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{
		{Member: "m1", Rendered: list("cpu", "1"), Kept: list("cpu", "1")},
		{Member: "m2", Rendered: list("cpu", "20"), Kept: list("cpu", "3")},
	})
	if len(got.Refused) != 1 || render(got.Charged) != "cpu=4" {
		t.Errorf("charged %s, refused %q; want cpu=4 (m2 keeps its 3), m2 refused", render(got.Charged), refusedMembers(got))
	}
}

func TestAShrinkingMemberMakesRoomForAGrowingOne(t *testing.T) {
	tr := teamOf8()
	tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{
		{Member: "m1", Rendered: list("cpu", "4")}, {Member: "m2", Rendered: list("cpu", "4")},
	})
	// m1 grows by 2 while m2 shrinks by 2: fits whatever the order given.
	got, _ := tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{
		{Member: "m1", Rendered: list("cpu", "6"), Kept: list("cpu", "4")},
		{Member: "m2", Rendered: list("cpu", "2"), Kept: list("cpu", "4")},
	})
	if len(got.Refused) != 0 || render(got.Charged) != "cpu=8" {
		t.Errorf("charged %s, refused %q; want cpu=8, none", render(got.Charged), refusedMembers(got))
	}
}

func TestOnlyGrowthIsCheckedSoARenderingAtItsOldUsageIsNeverRefused(t *testing.T) {
	tr := teamOf8()
	tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{{Member: "m1", Rendered: list("cpu", "8")}})
	tr.SetQuota("tenant", "team", list("cpu", "4")) // lowered below use
	got, _ := tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{{Member: "m1", Rendered: list("cpu", "8"), Kept: list("cpu", "8")}})
	if len(got.Refused) != 0 {
		t.Errorf("refused %q, want none", refusedMembers(got))
	}
}

func TestTheRenderedChargeHoldsUntilTheBindingStatusShowsItAndSurvivesARestart(t *testing.T) {
	now := time.Unix(0, 0)
	tr := tracker.New(tracker.Options{Now: func() time.Time { return now }})
	tr.MarkSynced()
	tr.SetQuota("tenant", "team", list("cpu", "8"))
	w := deployment(cpuEach("1"), on("m1", 2))
	tr.ObserveBinding("tenant/a", "tenant", w, false)
	tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{{Member: "m1", Rendered: list("cpu", "6")}})
	// An update of the binding that does not show the status yet.
	tr.ObserveRenderedBinding("tenant/a", "tenant", w, nil, false)
	if used := tr.Used("tenant")[corev1.ResourceCPU]; used.String() != "6" {
		t.Fatalf("used cpu %s before the status shows it, want 6", used.String())
	}
	tr.ObserveRenderedBinding("tenant/a", "tenant", w, list("cpu", "6"), false)
	now = now.Add(2 * tracker.DefaultReservationTTL)
	tr.ObserveRenderedBinding("tenant/a", "tenant", w, list("cpu", "6"), false)
	if used := tr.Used("tenant")[corev1.ResourceCPU]; used.String() != "6" {
		t.Fatalf("used cpu %s once the status shows it, want 6", used.String())
	}
	// A new manager rebuilds from objects.
	restarted := synced()
	restarted.SetQuota("tenant", "team", list("cpu", "8"))
	restarted.ObserveRenderedBinding("tenant/a", "tenant", w, list("cpu", "6"), false)
	if err := restarted.CheckQuota("tenant", cpuEach("1"), 3); err == nil {
		t.Error("a restarted tracker admits 3 more CPU over a binding rendering 6 of 8")
	}
	// Deleting frees the rendering too.
	restarted.ObserveRenderedBinding("tenant/a", "tenant", w, list("cpu", "6"), true)
	if used := restarted.Used("tenant")[corev1.ResourceCPU]; !used.IsZero() {
		t.Errorf("used cpu %s after deletion started, want 0", used.String())
	}
}

func TestARenderingAndAPlacementRacingForTheLastOfTheQuotaCannotBothGetIt(t *testing.T) {
	for round := range 200 {
		tr := envelope() // 60 of 64 CPU used, a uses 40
		s, snap := fleet(t, tr)
		var (
			wg        sync.WaitGroup
			rendering tracker.Rendering
			placeErr  error
		)
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			// a's override asks 4 more CPU on m1.
			rendering, _ = tr.ChargeRendered("tenant/a", "tenant", []tracker.MemberRendering{{Member: "m1", Rendered: list("cpu", "44")}})
		}()
		go func() {
			defer wg.Done()
			<-start
			_, placeErr = s.Schedule(snap, input("x", 4, "1"))
		}()
		close(start)
		wg.Wait()
		if admitted := btoi(len(rendering.Refused) == 0) + btoi(placeErr == nil); admitted != 1 {
			t.Fatalf("round %d: rendering refused %q, placement error %v; want exactly one of the two admitted", round, refusedMembers(rendering), placeErr)
		}
		if got := tr.Used("tenant")[corev1.ResourceCPU]; got.String() != "64" {
			t.Fatalf("round %d: used cpu %s, want 64", round, got.String())
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
