package applier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

// statusWrites is a hub whose status applies are answered by refuse (by
// resourceVersion sent), recording the versions sent.
func statusWrites(t *testing.T, refuse func(rv string) bool) (client.Client, *[]string) {
	t.Helper()
	var sent []string
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var o struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return err
			}
			sent = append(sent, o.Metadata.ResourceVersion)
			if refuse(o.Metadata.ResourceVersion) {
				return apierrors.NewConflict(schema.GroupResource{Group: "work.flotilla.io", Resource: "works"}, o.Metadata.Name, nil)
			}
			return nil
		},
	})
	return c, &sent
}

func readWork(generation int64, rv string) *workv1alpha1.Work {
	return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-es-m1", Name: "w", Generation: generation, ResourceVersion: rv}}
}

func appliedNow(w *workv1alpha1.Work) *workv1alpha1.Work {
	w = w.DeepCopy()
	w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: workv1alpha1.WorkReasonApplied, ObservedGeneration: w.Generation}}
	return w
}

func liveHub(t *testing.T, w *workv1alpha1.Work) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(w).Build()
}

// The outcome is written without an optimistic lock (its writer handles a
// Work one reconcile at a time and reads the outcome from the member): no
// resourceVersion is sent, whatever version the Work was read at, and a
// cache behind the writer's own last write costs no refused request.
func TestAnOutcomeIsWrittenWithoutALock(t *testing.T) {
	read := readWork(3, "10")
	hub, sent := statusWrites(t, func(rv string) bool { return rv != "" })
	if _, err := applier.WriteOutcome(context.Background(), hub, read, appliedNow(read), "flotilla-test", nil, nil); err != nil {
		t.Fatalf("WriteOutcome: %v", err)
	}
	if len(*sent) != 1 || (*sent)[0] != "" {
		t.Errorf("versions sent %q, want one write without a version", *sent)
	}
}

// rollingOut is w applied with its Deployment not healthy yet, ready of 3.
func rollingOut(w *workv1alpha1.Work, ready int) *workv1alpha1.Work {
	w = appliedNow(w)
	msg := fmt.Sprintf("%d of 3 replicas ready", ready)
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{Type: workv1alpha1.WorkAvailable, Status: metav1.ConditionFalse,
		Reason: workv1alpha1.WorkReasonNotAvailable, Message: "apps/v1 Deployment fleet/web: " + msg, ObservedGeneration: w.Generation})
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
		Identifier: workv1alpha1.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "fleet", Name: "web"},
		Applied:    true, Health: workv1alpha1.ResourceUnhealthy, Message: msg,
		Status: &runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"replicas":3,"readyReplicas":%d}`, ready))},
	}}
	return w
}

// healthy is w applied with its Deployment healthy.
func healthy(w *workv1alpha1.Work) *workv1alpha1.Work {
	w = rollingOut(w, 3)
	w.Status.Conditions[1] = metav1.Condition{Type: workv1alpha1.WorkAvailable, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.WorkReasonAvailable, Message: "every object is healthy", ObservedGeneration: w.Generation}
	w.Status.ManifestStatuses[0].Health, w.Status.ManifestStatuses[0].Message = workv1alpha1.ResourceHealthy, ""
	return w
}

// A Deployment rolling out reports each Pod that gets ready; on the hub
// the count moves at most once per interval, but a change of state — here
// the Deployment turning healthy — is written at once, whenever it comes.
func TestProgressIsWrittenAtMostOncePerIntervalAndStateChangesAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	reports := &pacing.Reports{Interval: time.Second, Clock: clk}
	hub, sent := statusWrites(t, func(string) bool { return false })
	write := func(before, after *workv1alpha1.Work) time.Duration {
		t.Helper()
		wait, err := applier.WriteOutcome(context.Background(), hub, before, after, "flotilla-test", reports, nil)
		if err != nil {
			t.Fatalf("WriteOutcome: %v", err)
		}
		return wait
	}
	w := readWork(1, "1")
	if wait := write(w, rollingOut(w, 0)); wait != 0 || len(*sent) != 1 {
		t.Fatalf("first report: held %s, %d writes; want it written at once", wait, len(*sent))
	}
	on := rollingOut(w, 0)
	clk.Step(300 * time.Millisecond)
	if wait := write(on, rollingOut(w, 1)); wait != 700*time.Millisecond || len(*sent) != 1 {
		t.Errorf("progress 300ms after the last report: held %s with %d writes; want held 700ms, nothing written", wait, len(*sent))
	}
	clk.Step(time.Second)
	if wait := write(on, rollingOut(w, 1)); wait != 0 || len(*sent) != 2 {
		t.Errorf("progress once the interval passed: held %s with %d writes; want it written", wait, len(*sent))
	}
	on = rollingOut(w, 1)
	clk.Step(100 * time.Millisecond)
	if wait := write(on, healthy(w)); wait != 0 || len(*sent) != 3 {
		t.Errorf("turned healthy 100ms after the last report: held %s with %d writes; want it written at once", wait, len(*sent))
	}
	failed := rollingOut(w, 1)
	failed.Status.ManifestStatuses[0].Applied, failed.Status.ManifestStatuses[0].Message = false, "admission webhook denied the request"
	clk.Step(100 * time.Millisecond)
	if wait := write(healthy(w), failed); wait != 0 || len(*sent) != 4 {
		t.Errorf("a manifest refused 100ms after the last report: held %s with %d writes; want it written at once", wait, len(*sent))
	}
}

// A Work read again before the cache shows its writer's last status write
// is taken as written: the same outcome is not written twice (nor with new
// transition times), and what the member holds — the record from which a
// later generation's dropped objects are removed — is the written one,
// not the cache's. A Work of the same name but another UID is not.
func TestAWorkReadBeforeTheCacheShowsItsLastWriteIsTakenAsWritten(t *testing.T) {
	hub, sent := statusWrites(t, func(string) bool { return false })
	outcomes := &applier.Outcomes{}
	read := readWork(1, "1")
	read.UID = "w-1"
	first := rollingOut(read, 0)
	if _, err := applier.WriteOutcome(context.Background(), hub, read, first, "flotilla-test", nil, outcomes); err != nil || len(*sent) != 1 {
		t.Fatalf("first write: %v, %d writes", err, len(*sent))
	}

	stale := readWork(1, "1") // the cache, without that write
	stale.UID = "w-1"
	outcomes.Overlay(stale)
	if len(stale.Status.ManifestStatuses) != 1 || stale.Status.ManifestStatuses[0].Identifier.Name != "web" {
		t.Fatalf("overlaid manifest statuses %+v, want the written Deployment web", stale.Status.ManifestStatuses)
	}
	if _, err := applier.WriteOutcome(context.Background(), hub, stale.DeepCopy(), rollingOut(read, 0), "flotilla-test", nil, outcomes); err != nil || len(*sent) != 1 {
		t.Errorf("the same outcome again from a lagging cache: %v, %d writes; want none more", err, len(*sent))
	}

	other := readWork(1, "1")
	other.UID = "w-2"
	outcomes.Overlay(other)
	if len(other.Status.ManifestStatuses) != 0 {
		t.Errorf("a new Work of the same name took the old one's outcome: %+v", other.Status.ManifestStatuses)
	}
	outcomes.Forget(client.ObjectKeyFromObject(read))
	forgotten := readWork(1, "1")
	forgotten.UID = "w-1"
	outcomes.Overlay(forgotten)
	if len(forgotten.Status.ManifestStatuses) != 0 {
		t.Errorf("a forgotten Work still overlaid: %+v", forgotten.Status.ManifestStatuses)
	}
}

// An outcome is remembered, and Reported told, as its write starts: a
// reader in the same process sees it before the hub has it. A write that
// fails puts back what was remembered before, so that the outcome is
// written again next time rather than taken as written.
func TestAnOutcomeIsReportedAsItsWriteStartsAndForgottenIfItsWriteFails(t *testing.T) {
	refuse := false
	hub, sent := statusWrites(t, func(string) bool { return refuse })
	read := readWork(1, "1")
	read.UID = "w-1"
	overlaid := func() *workv1alpha1.Work {
		w := readWork(1, "1") // the cache, without any write
		w.UID = "w-1"
		return w
	}
	outcomes := &applier.Outcomes{}
	var seen []int // writes sent when Reported was told, and manifests it saw
	var turns []bool
	outcomes.Reported = func(w *workv1alpha1.Work, becameAvailable bool) {
		stale := overlaid()
		outcomes.Overlay(stale)
		seen = append(seen, len(*sent), len(stale.Status.ManifestStatuses))
		turns = append(turns, becameAvailable)
	}
	first := rollingOut(read, 0)
	if _, err := applier.WriteOutcome(context.Background(), hub, read, first, "flotilla-test", nil, outcomes); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 0 || seen[1] != 1 {
		t.Fatalf("Reported saw %v (writes sent, manifests overlaid); want [0 1]: told before the write, the outcome already remembered", seen)
	}

	refuse = true
	if _, err := applier.WriteOutcome(context.Background(), hub, first, healthy(read), "flotilla-test", nil, outcomes); err == nil {
		t.Fatal("the refused write returned no error")
	}
	after := overlaid()
	outcomes.Overlay(after)
	if len(after.Status.ManifestStatuses) != 1 || after.Status.ManifestStatuses[0].Health == workv1alpha1.ResourceHealthy {
		t.Errorf("after a refused write the overlay is %+v; want the outcome written before (not healthy)", after.Status.ManifestStatuses)
	}
	refuse = false
	if _, err := applier.WriteOutcome(context.Background(), hub, after, healthy(read), "flotilla-test", nil, outcomes); err != nil || len(*sent) != 3 {
		t.Errorf("the healthy outcome again: %v, %d writes sent; want it written (3)", err, len(*sent))
	}
	// The first report (not Available yet) is no turn; the healthy ones,
	// refused and made again, follow an Available=False: turns.
	if want := []bool{false, true, true}; !slices.Equal(turns, want) {
		t.Errorf("Reported told becameAvailable %v, want %v", turns, want)
	}
}

// A Work turning Available after it was reported not Available is the
// turn its binding's readers wait for; a first report healthy at once, a
// Work staying Available or losing it are not.
func TestBecameAvailable(t *testing.T) {
	available := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue}, {Type: workv1alpha1.WorkAvailable, Status: s}}
	}
	applied := []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue}}
	for _, c := range []struct {
		name          string
		before, after []metav1.Condition
		want          bool
	}{
		{"not available, then available", available(metav1.ConditionFalse), available(metav1.ConditionTrue), true},
		{"unknown, then available", available(metav1.ConditionUnknown), available(metav1.ConditionTrue), true},
		{"first report, available at once", nil, available(metav1.ConditionTrue), false},
		{"applied without availability, then available", applied, available(metav1.ConditionTrue), false},
		{"stays available", available(metav1.ConditionTrue), available(metav1.ConditionTrue), false},
		{"loses availability", available(metav1.ConditionTrue), available(metav1.ConditionFalse), false},
		{"stays not available", available(metav1.ConditionFalse), available(metav1.ConditionFalse), false},
	} {
		if got := applier.BecameAvailable(c.before, c.after); got != c.want {
			t.Errorf("%s: BecameAvailable = %v, want %v", c.name, got, c.want)
		}
	}
}
