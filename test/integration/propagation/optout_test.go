package propagation_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
)

// TestAMemberThatOptsOutKeepsWhatRuns: while a member leaves the fleet
// because its Cluster no longer opts in (Terminating, reason Unenrolling, as
// enrolment writes it), a Work it loses is released without deleting its
// objects there, and the member says what it kept; a member that stays has
// its objects withdrawn as before.
func TestAMemberThatOptsOutKeepsWhatRuns(t *testing.T) {
	const ns = "optout"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: optout}
data: {version: v1}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: settings, namespace: optout}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0, member2, 0))
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	}
	eventually(t, "settings in member1", func() error { return inMember(member1, cm()) })
	eventually(t, "settings in member2", func() error { return inMember(member2, cm()) })

	setTerminating := func(reason string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			m := &clusterv1alpha1.MemberCluster{}
			if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member2}, m); err != nil {
				return err
			}
			if reason == "" {
				conditions.Delete(m, clusterv1alpha1.ConditionTerminating)
				conditions.Delete(m, clusterv1alpha1.ConditionObjectsLeftBehind)
			} else {
				conditions.Set(m, metav1.Condition{Type: clusterv1alpha1.ConditionTerminating, Status: metav1.ConditionTrue, Reason: reason, Message: "set by the test"})
			}
			return hub.Client.Status().Update(ctx(), m)
		})
		if err != nil {
			t.Fatalf("set member2's Terminating condition: %v", err)
		}
	}
	setTerminating(clusterv1alpha1.UnenrollingReason)
	t.Cleanup(func() {
		setTerminating("")
		_ = members[member2].Delete(ctx(), cm())
	})

	// The binding leaves member2, as the drain's eviction does.
	schedule(t, rb, placement(member1, 0))
	eventually(t, "member2's Work released", func() error {
		if _, err := work(rb, member2); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	if err := inMember(member2, cm()); err != nil {
		t.Fatalf("member2 leaving the fleet lost settings: %v", err)
	}
	eventually(t, "member2 names what it kept", func() error {
		mc := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: member2}, mc); err != nil {
			return err
		}
		return hasCondition(mc, clusterv1alpha1.ConditionObjectsLeftBehind, metav1.ConditionTrue, clusterv1alpha1.ObjectsKeptReason,
			"leaves the fleet (its Cluster no longer opts in): its objects stay there: ConfigMap optout/settings")
	})
	eventually(t, "a LeftInMember event on member2", func() error {
		return eventOn("", member2, execution.LeftInMemberReason, "ConfigMap optout/settings")
	})

	// A member that is deleted with its Cluster has its objects withdrawn.
	if err := members[member2].Delete(ctx(), cm()); err != nil {
		t.Fatal(err)
	}
	setTerminating(clusterv1alpha1.ClusterDeletingReason)
	schedule(t, rb, placement(member1, 0, member2, 0))
	eventually(t, "settings back in member2", func() error { return inMember(member2, cm()) })
	schedule(t, rb, placement(member1, 0))
	eventually(t, "settings withdrawn from member2", func() error { return goneFromMember(member2, cm()) })
}
