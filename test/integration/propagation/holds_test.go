package propagation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
)

// holds is the scheduler's held-capacity ledger as the manager shares it
// with the aggregate phase; this suite has no scheduler, so tests commit
// entries as a decision would.
var holds = assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)

// podsModel is a member's capacity model, observed at observed, with room
// for 110 Pods.
func podsModel(observed time.Time) *capacity.Model {
	return capacity.NewModel(&clusterv1alpha1.CapacityModel{
		ObservedTime: metav1.NewTime(observed),
		NodeGroups:   []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}},
	})
}

// TestTheGraceOfAHoldStartsWhenItsMemberAppliedTheWork: capacity held for a
// decision counts its grace from the moment the aggregate phase sees the
// member apply the Work carrying it — on a member that answers, soon; on
// one that does not, never, so a newer capacity model does not release it
// while the Work has not reached the member.
func TestTheGraceOfAHoldStartsWhenItsMemberAppliedTheWork(t *testing.T) {
	const ns = "holds"
	namespace(t, ns, true)
	createYAML(t, strings.Join([]string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: holds}\ndata: {k: v}\n",
		`apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: everywhere, namespace: holds}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
`}, "---\n"))
	rb := waitForBinding(t, ns, "settings", "ConfigMap")
	key := rb.Namespace + "/" + rb.Name
	decided := time.Now()
	model := podsModel(decided)
	// What a decision placing 1 replica on each would hold, then write.
	holds.Commit(key, ns, capacity.NewRequirement(nil), decided, []assumed.Assignment{
		{Member: member1, Replicas: 1, Base: model}, {Member: hungMember, Replicas: 1, Base: model},
	})
	schedule(t, rb, placement(member1, 0, hungMember, 0))
	holds.Decided(key, rb.Generation)
	t.Cleanup(func() { holds.Forget(key) })

	entry := func(member string) (assumed.Entry, error) {
		for _, e := range holds.Entries(member) {
			if e.Binding == key {
				return e, nil
			}
		}
		return assumed.Entry{}, fmt.Errorf("no entry of %s on %s", key, member)
	}
	eventually(t, "member1's hold told its Work is applied", func() error {
		e, err := entry(member1)
		if err != nil {
			return err
		}
		if e.Generation != rb.Generation || e.AppliedAt.IsZero() {
			return fmt.Errorf("entry %+v: want generation %d, applied", e, rb.Generation)
		}
		if e.AppliedAt.Before(decided) {
			return fmt.Errorf("applied at %s, before the decision at %s", e.AppliedAt, decided)
		}
		return nil
	})
	// The hung member's Work says it waits for the member; its hold is not
	// told it is applied, and a model newer than the decision's grace
	// leaves it counted.
	eventually(t, "the hung member's Work waiting for the member", func() error {
		w, err := work(rb, hungMember)
		if err != nil {
			return err
		}
		return hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnreachable, "")
	})
	e, err := entry(hungMember)
	if err != nil {
		t.Fatal(err)
	}
	if !e.AppliedAt.IsZero() {
		t.Fatalf("the hung member's hold was told applied at %s", e.AppliedAt)
	}
	later := podsModel(decided.Add(time.Minute))
	if m, _ := holds.Adjusted(hungMember, later, "another"); m.Fit(capacity.NewRequirement(nil)) != 109 {
		t.Errorf("the hung member's model a minute later, for another binding: %d pods fit, want 109 (one held)", m.Fit(capacity.NewRequirement(nil)))
	}
	if m, _ := holds.Adjusted(member1, later, "another"); m.Fit(capacity.NewRequirement(nil)) != 110 {
		t.Errorf("member1's model a minute later, for another binding: %d pods fit, want 110 (released a grace after the apply)", m.Fit(capacity.NewRequirement(nil)))
	}
}
