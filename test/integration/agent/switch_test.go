package agent_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// switchTo sets the edge Cluster's sync-mode annotation and waits until the
// member's spec.syncMode follows.
func switchTo(t *testing.T, mode clusterv1alpha1.SyncMode) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &capiv1.Cluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: clusterNS, Name: edge}, c); err != nil {
			return err
		}
		c.Annotations[clusterv1alpha1.SyncModeAnnotation] = string(mode)
		return hub.Client.Update(ctx(), c)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "member edge in "+string(mode)+" mode", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: edge}, m); err != nil {
			return err
		}
		if m.Spec.SyncMode != mode {
			return fmt.Errorf("syncMode %s", m.Spec.SyncMode)
		}
		return nil
	})
	// Whoever applied until now may be finishing a reconcile it started.
	time.Sleep(time.Second)
}

func TestSwitchingBetweenPushAndPullKeepsOneCopyOfTheWorkload(t *testing.T) {
	path := configMapPath("switch", "cm")
	applies := func(who string, want int) func() error {
		return func() error {
			if got := requests.of(who, path); got != want {
				return fmt.Errorf("%s applied the ConfigMap %d times since, want %d", who, got, want)
			}
			return nil
		}
	}
	w := createWork(t, edge, "switch", manifest(t, configMap("switch", "cm", "pull-1")))
	eventually(t, "the ConfigMap applied by the agent", valueIs("switch", "cm", "pull-1"))
	uid := memberUID(t)
	if n := requests.of("hub", path); n != 0 {
		t.Fatalf("the hub applied into a Pull-mode member %d times", n)
	}
	t.Cleanup(func() { switchTo(t, clusterv1alpha1.Pull) })

	switchTo(t, clusterv1alpha1.Push)
	agentBefore := requests.of("agent", path)
	updateWork(t, w, manifest(t, configMap("switch", "cm", "push-1")))
	eventually(t, "the change applied by the hub", valueIs("switch", "cm", "push-1"))
	if requests.of("hub", path) == 0 {
		t.Errorf("the hub did not apply the Work of a Push-mode member")
	}
	consistently(t, 2*time.Second, "the agent leaving a Push-mode member's Work to the hub", applies("agent", agentBefore))

	switchTo(t, clusterv1alpha1.Pull)
	hubBefore, agentBefore := requests.of("hub", path), requests.of("agent", path)
	updateWork(t, w, manifest(t, configMap("switch", "cm", "pull-2")))
	eventually(t, "the change applied by the agent", valueIs("switch", "cm", "pull-2"))
	if requests.of("agent", path) == agentBefore {
		t.Errorf("the agent did not apply the Work after the member switched back to Pull")
	}
	consistently(t, 2*time.Second, "the hub leaving a Pull-mode member's Work to the agent", applies("hub", hubBefore))

	// One object all along, owned by one field manager: nothing lost, nothing duplicated.
	if got := memberUID(t); got != uid {
		t.Errorf("the ConfigMap was re-created across the switches: UID %s, was %s", got, uid)
	}
	cm := &corev1.ConfigMap{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "switch", Name: "cm"}, cm); err != nil {
		t.Fatal(err)
	}
	if got := fieldManagers(cm); got != "flotilla/Apply" {
		t.Errorf("field managers %s, want flotilla/Apply only: the hub and the agent apply as the same manager", got)
	}
	eventually(t, "the Work Applied", func() error {
		return conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied)
	})

	if err := hub.Client.Delete(ctx(), w); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap removed by the agent", goneFromMember(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "switch", Name: "cm"}}))
}

func memberUID(t *testing.T) types.UID {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "switch", Name: "cm"}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.UID
}
