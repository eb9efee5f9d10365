package enrolment_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// A member's spec.taints is shared: enrolment sets and clears its
// terminating taint, the taint policies theirs, users their own. While a
// Cluster opts out and in again, round after round (enrolment adds and
// removes the terminating taint each time), an operator keeps adding taints
// of their own. None of the operator's taints may be lost: a merge patch
// from enrolment's cached read would write the whole list back without
// them.
func TestOptingOutAndInLosesNoTaintAnOperatorSet(t *testing.T) {
	const ns, name, rounds = "enrol-taints", "busy", 8
	createCluster(t, ns, name, clusterOpts{labels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}})
	waitEnrolled(t, name)
	// A Work keeps the member draining while opted out, instead of removed.
	work := newWork(clusterv1alpha1.ExecutionNamespace(name), "held")
	if err := hub.Client.Create(ctx(), work); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), work) })

	hasTerminating := func() (bool, error) {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, m); err != nil {
			return false, err
		}
		return slices.ContainsFunc(m.Spec.Taints, func(t corev1.Taint) bool { return t.Key == clusterv1alpha1.TaintTerminating }), nil
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var added []string
	var addErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("operator.example/t%03d", i)
			// Many writers share the member (enrolment, health, the
			// conflicts this test provokes): retry for a while.
			err := retry.RetryOnConflict(wait.Backoff{Steps: 100, Duration: 10 * time.Millisecond, Factor: 1.1, Jitter: 0.2, Cap: 200 * time.Millisecond}, func() error {
				m := &clusterv1alpha1.MemberCluster{}
				if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, m); err != nil {
					return err
				}
				m.Spec.Taints = append(m.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectPreferNoSchedule})
				return hub.Client.Update(ctx(), m)
			})
			if err != nil {
				addErr = fmt.Errorf("add taint %s: %w", key, err)
				return
			}
			added = append(added, key)
			time.Sleep(50 * time.Millisecond)
		}
	}()

	for round := range rounds {
		updateCluster(t, ns, name, func(c *capiv1.Cluster) { delete(c.Labels, clusterv1alpha1.EnrolLabel) })
		eventually(t, fmt.Sprintf("round %d: the terminating taint set", round), func() error {
			if on, err := hasTerminating(); err != nil || !on {
				return fmt.Errorf("terminating taint %v (%v)", on, err)
			}
			return nil
		})
		updateCluster(t, ns, name, func(c *capiv1.Cluster) { c.Labels[clusterv1alpha1.EnrolLabel] = "true" })
		eventually(t, fmt.Sprintf("round %d: the terminating taint cleared", round), func() error {
			if on, err := hasTerminating(); err != nil || on {
				return fmt.Errorf("terminating taint %v (%v)", on, err)
			}
			return nil
		})
	}
	close(stop)
	wg.Wait()
	if addErr != nil {
		t.Fatal(addErr)
	}

	m := &clusterv1alpha1.MemberCluster{}
	if err := hub.Client.Get(ctx(), client.ObjectKey{Name: name}, m); err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, key := range added {
		if !slices.ContainsFunc(m.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key }) {
			lost = append(lost, key)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of the %d taints the operator added were lost: %v", len(lost), len(added), lost)
	}
	t.Logf("MEASURE %d opt-out/opt-in rounds, %d operator taints added meanwhile, %d lost", rounds, len(added), len(lost))
}
