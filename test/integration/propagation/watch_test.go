package propagation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestAMembersChangesReachTheHubByWatch: the suite re-applies Works only
// every minute (five once healthy), so what follows within seconds comes
// from the watch of applied objects in the member — a Deployment turning
// Ready shows in its binding, a Deployment scaled in the member by someone
// else is set back, and one deleted there is put back.
func TestAMembersChangesReachTheHubByWatch(t *testing.T) {
	const ns = "watched"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: watched}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: watched}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web:1}]
`)
	rb := bindAndSchedule(t, ns, "web", "Deployment", placement(member1, 2))
	binding := func() (*workv1alpha1.ResourceBinding, error) {
		return rb, hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb)
	}
	eventually(t, "the Deployment applied to member1, not healthy yet", func() error {
		b, err := binding()
		if err != nil {
			return err
		}
		if len(b.Status.AggregatedStatus) != 1 || !b.Status.AggregatedStatus[0].Applied || b.Status.AggregatedStatus[0].Health == workv1alpha1.ResourceHealthy {
			return fmt.Errorf("aggregated status %+v", b.Status.AggregatedStatus)
		}
		return nil
	})

	start := time.Now()
	reportReady(t, member1, ns, "web", 2)
	eventually(t, "the binding showing member1's Deployment Ready, before any re-apply", func() error {
		b, err := binding()
		if err != nil {
			return err
		}
		if b.Status.ReadyReplicas != 2 || b.Status.AggregatedStatus[0].Health != workv1alpha1.ResourceHealthy {
			return fmt.Errorf("ready %d, aggregated status %+v", b.Status.ReadyReplicas, b.Status.AggregatedStatus)
		}
		return nil
	})
	t.Logf("MEASURE member Ready → binding Ready on the hub: %s (re-apply every %s)", time.Since(start).Round(time.Millisecond), resyncUnhealthy)

	// Someone scales it in the member with an update of their own: the
	// watch sees its generation move and the Work is applied in full at
	// once; the replica count, now another manager's, stays the member's
	// and the Work says so (retain, docs/propagation.md).
	scaled := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := inMember(member1, scaled); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	scaled.Spec.Replicas = ptr.To[int32](5)
	if err := members[member1].Update(ctx(), scaled); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Work applied again, reporting spec.replicas kept as the member's", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if err := hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied, ""); err != nil {
			return err
		}
		if len(w.Status.ManifestStatuses) != 1 || !strings.Contains(w.Status.ManifestStatuses[0].Message, "spec.replicas kept as the member's: owned there by") {
			return fmt.Errorf("manifestStatuses %s", rawJSON(w.Status.ManifestStatuses))
		}
		return nil
	})
	if err := inMember(member1, scaled); err != nil || *scaled.Spec.Replicas != 5 {
		t.Fatalf("member1's replicas %d (err %v), want its own 5 kept", *scaled.Spec.Replicas, err)
	}
	t.Logf("MEASURE Deployment scaled in the member → the Work reports it: %s (re-apply every %s once healthy)", time.Since(start).Round(time.Millisecond), resyncHealthy)
	// The member's admin gives the field back: applied again at once.
	if err := inMember(member1, scaled); err != nil {
		t.Fatal(err)
	}
	scaled.Spec.Replicas = ptr.To[int32](2)
	scaled.ManagedFields = nil
	if err := members[member1].Update(ctx(), scaled); err != nil {
		t.Fatal(err)
	}

	// Someone deletes it in the member: the watch sees it go and the Work
	// is applied again.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := inMember(member1, d); err != nil {
		t.Fatal(err)
	}
	uid := d.UID
	start = time.Now()
	if err := members[member1].Delete(ctx(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment put back in member1", func() error {
		again := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		if err := inMember(member1, again); err != nil {
			return err
		}
		if again.UID == uid {
			return fmt.Errorf("still the deleted one")
		}
		return nil
	})
	t.Logf("MEASURE Deployment deleted in the member → re-created: %s (re-apply every %s once healthy)", time.Since(start).Round(time.Millisecond), resyncHealthy)
}
