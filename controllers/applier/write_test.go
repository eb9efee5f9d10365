package applier_test

import (
	"context"
	"encoding/json"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
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

// Refused because the cache lagged behind the Work's last write (its own
// status, here): the spec is unchanged, so the outcome is written again at
// once on the live version.
func TestAnOutcomeRefusedForTheCachesLagIsWrittenAgainOnTheLiveVersion(t *testing.T) {
	read := readWork(3, "10")
	hub, sent := statusWrites(t, func(rv string) bool { return rv == "10" })
	stored := readWork(3, "")
	live := liveHub(t, stored)
	if err := applier.WriteOutcome(context.Background(), hub, live, read, appliedNow(read), "flotilla-test"); err != nil {
		t.Fatalf("WriteOutcome: %v", err)
	}
	got := &workv1alpha1.Work{}
	_ = live.Get(context.Background(), client.ObjectKeyFromObject(stored), got)
	if len(*sent) != 2 || (*sent)[0] != "10" || (*sent)[1] != got.ResourceVersion {
		t.Errorf("versions sent %v, want 10 then the live %s", *sent, got.ResourceVersion)
	}
}

// Refused because the Work's spec changed since: the outcome is of the
// version before and must not be written; the caller comes back.
func TestAnOutcomeOfAnOlderSpecIsNotWrittenAgain(t *testing.T) {
	read := readWork(3, "10")
	hub, sent := statusWrites(t, func(string) bool { return true })
	live := liveHub(t, readWork(4, ""))
	err := applier.WriteOutcome(context.Background(), hub, live, read, appliedNow(read), "flotilla-test")
	if !apierrors.IsConflict(err) {
		t.Errorf("WriteOutcome: %v, want the conflict", err)
	}
	if len(*sent) != 1 {
		t.Errorf("versions sent %v, want the first write only", *sent)
	}
}

// Without a live reader a refusal is returned as it is.
func TestAnOutcomeRefusedWithoutALiveReaderIsReturned(t *testing.T) {
	read := readWork(3, "10")
	hub, _ := statusWrites(t, func(string) bool { return true })
	if err := applier.WriteOutcome(context.Background(), hub, nil, read, appliedNow(read), "flotilla-test"); !apierrors.IsConflict(err) {
		t.Errorf("WriteOutcome: %v, want the conflict", err)
	}
}
