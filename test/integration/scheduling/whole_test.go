package scheduling_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A leader can stop between any two of its requests. Whatever it had
// written of a decision must read as a decision: Scheduled=True with the
// lastScheduledTime a new leader rebuilds held capacity from
// (TestANewLeaderDoesNotHandOutCapacityThePreviousOneJustPlaced), never the
// condition alone. Here the scheduler's client refuses every status write
// after the first, as if it stopped right after it.
func TestADecisionIsWrittenWholeOrNotAtAll(t *testing.T) {
	own := ownHubWithOneMember(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var statusWrites atomic.Int32
	stopped := errors.New("the leader stopped")
	once := func() error {
		if statusWrites.Add(1) > 1 {
			return stopped
		}
		return nil
	}
	stop := startPlacer(t, own, nil, func(c client.Client) client.Client {
		return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := once(); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if err := once(); err != nil {
					return err
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				if err := once(); err != nil {
					return err
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		})
	})
	defer stop()

	b := createOnOnly(t, own.Client, "whole")
	got := &workv1alpha1.ResourceBinding{}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := own.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		if conditions.Has(got, workv1alpha1.ConditionScheduled) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The writes that would have followed the first, refused.
	time.Sleep(time.Second)
	if err := own.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	cond := conditions.Get(got, workv1alpha1.ConditionScheduled)
	if cond == nil || len(got.Spec.Clusters) == 0 {
		t.Fatalf("the first status write did not record the decision: spec.clusters %v, Scheduled %v", got.Spec.Clusters, cond)
	}
	if got.Status.LastScheduledTime == nil || got.Status.SchedulerObservedGeneration != got.Generation || got.Status.SchedulingDecision == nil {
		t.Fatalf("a decision half written: Scheduled=%s (%s) on generation %d, but lastScheduledTime %v, schedulerObservedGeneration %d, schedulingDecision set %t",
			cond.Status, cond.Message, got.Generation, got.Status.LastScheduledTime, got.Status.SchedulerObservedGeneration, got.Status.SchedulingDecision != nil)
	}
	t.Logf("written whole in the first status write (%d tried in all): %s, lastScheduledTime %s", statusWrites.Load(), cond.Message, got.Status.LastScheduledTime)
}

// noWatch lets the interceptor wrap the manager's client, which has no Watch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("no watch here")
}
