package propagation_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
)

// TestAHungMemberDelaysOnlyItsOwnWorks: six bindings placed on a member
// that accepts connections and never answers and on member1 — more hung
// Works than the execution controller has workers. member1 gets every
// object; the hung member's Works say MemberUnreachable.
func TestAHungMemberDelaysOnlyItsOwnWorks(t *testing.T) {
	const ns, n = "isolation", 6
	namespace(t, ns, true)
	var docs []string
	for i := range n {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {k: v}\n", i, ns))
	}
	docs = append(docs, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: everywhere, namespace: isolation}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
`)
	createYAML(t, strings.Join(docs, "---\n"))
	var bindings []*workv1alpha1.ResourceBinding
	for i := range n {
		bindings = append(bindings, bindAndSchedule(t, ns, fmt.Sprintf("cm-%d", i), "ConfigMap", placement(hungMember, 0, member1, 0)))
	}
	start := time.Now()
	for i := range n {
		eventually(t, fmt.Sprintf("cm-%d in member1", i), func() error {
			return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}})
		})
	}
	t.Logf("member1 held all %d ConfigMaps %s after they were scheduled", n, time.Since(start).Round(10*time.Millisecond))
	for _, rb := range bindings {
		eventually(t, "the hung member's Work of "+rb.Name+" says why it waits", func() error {
			w, err := work(rb, hungMember)
			if err != nil {
				return err
			}
			return hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnreachable, "did not answer")
		})
	}
}

// TestADeletedWorkIsReleasedWhenItsMemberDoesNotAnswer: deleting a
// template placed on the hung member completes after the withdraw timeout;
// what may remain in the member is named in an event and on the
// MemberCluster.
func TestADeletedWorkIsReleasedWhenItsMemberDoesNotAnswer(t *testing.T) {
	const ns = "withdraw"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: withdraw}
data: {k: v}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: everywhere, namespace: withdraw}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(hungMember, 0, member1, 0))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
	eventually(t, "settings in member1", func() error { return inMember(member1, cm.DeepCopy()) })
	eventually(t, "the hung member's Work held by the execution finalizer", func() error {
		w, err := work(rb, hungMember)
		if err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(w, workv1alpha1.ExecutionFinalizer) {
			return errors.New("no execution finalizer yet")
		}
		return nil
	})
	hungWork, err := work(rb, hungMember)
	if err != nil {
		t.Fatal(err)
	}

	deleted := time.Now()
	if err := hub.Client.Delete(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "settings gone from member1", func() error { return goneFromMember(member1, cm.DeepCopy()) })
	consistently(t, withdrawTimeout/2, "the hung member's Work waits for its member", func() error {
		_, err := work(rb, hungMember)
		return err
	})
	eventually(t, "the hung member's Work released", func() error {
		_, err := work(rb, hungMember)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	if waited := time.Since(deleted); waited < withdrawTimeout {
		t.Errorf("the Work was released %s after its deletion, before the withdraw timeout %s", waited, withdrawTimeout)
	}
	eventually(t, "a LeftInMember event on the Work", func() error {
		return eventOn(hungWork.Namespace, hungWork.Name, execution.LeftInMemberReason, "ConfigMap withdraw/settings")
	})
	eventually(t, "the MemberCluster names what was left", func() error {
		mc := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: hungMember}, mc); err != nil {
			return err
		}
		return hasCondition(mc, clusterv1alpha1.ConditionObjectsLeftBehind, metav1.ConditionTrue, clusterv1alpha1.ObjectsLeftBehindReason, "ConfigMap withdraw/settings")
	})
}
