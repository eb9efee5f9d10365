// Package lease keeps flotilla-agent's Lease on the hub renewed: the
// agent's heartbeat, by which the hub tells a Pull-mode member it cannot
// reach from one whose agent stopped talking (docs/agent.md).
package lease

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Renewer creates the Lease and renews it every Interval. A failed renewal
// is retried sooner — after 1s, doubling up to Interval — so that a hub
// that comes back finds the Lease renewed within seconds.
type Renewer struct {
	// Client writes the Lease; it must not read from a cache.
	Client client.Client
	// Key names the Lease.
	Key client.ObjectKey
	// Holder is written to spec.holderIdentity.
	Holder string
	// Duration is written to spec.leaseDurationSeconds.
	Duration time.Duration
	// Interval between renewals.
	Interval time.Duration
	// Clock is the real clock when nil.
	Clock clock.Clock

	// latest is the Lease as last written: renewals update it without a read.
	latest *coordinationv1.Lease
}

// firstRetry is the wait after a first failed renewal.
const firstRetry = time.Second

// Start renews until ctx ends. It implements manager.Runnable.
func (r *Renewer) Start(ctx context.Context) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	log := ctrl.LoggerFrom(ctx).WithValues("lease", r.Key)
	retry := firstRetry
	for {
		wait := r.Interval
		if err := r.Renew(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Could not renew the agent's Lease; retrying", "in", retry)
			wait, retry = retry, min(2*retry, r.Interval)
		} else {
			retry = firstRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.Clock.After(wait):
		}
	}
}

// Renew writes renewTime = now, creating the Lease when it does not exist.
func (r *Renewer) Renew(ctx context.Context) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	now := metav1.NewMicroTime(r.Clock.Now())
	if r.latest != nil {
		l := r.latest.DeepCopy()
		r.stamp(l, now)
		err := r.Client.Update(ctx, l)
		if err == nil {
			r.latest = l
			return nil
		}
		// Changed or deleted by someone else: read it again below.
		r.latest = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("renew Lease %s: %w", r.Key, err)
		}
	}
	l := &coordinationv1.Lease{}
	err := r.Client.Get(ctx, r.Key, l)
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.Key.Namespace, Name: r.Key.Name}}
		r.stamp(l, now)
		l.Spec.AcquireTime = &now
		if err := r.Client.Create(ctx, l); err != nil {
			return fmt.Errorf("create Lease %s: %w", r.Key, err)
		}
	case err != nil:
		return fmt.Errorf("read Lease %s: %w", r.Key, err)
	default:
		if ptr.Deref(l.Spec.HolderIdentity, "") != r.Holder {
			l.Spec.AcquireTime = &now
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		}
		r.stamp(l, now)
		if err := r.Client.Update(ctx, l); err != nil {
			return fmt.Errorf("renew Lease %s: %w", r.Key, err)
		}
	}
	r.latest = l
	return nil
}

func (r *Renewer) stamp(l *coordinationv1.Lease, now metav1.MicroTime) {
	l.Spec.HolderIdentity = ptr.To(r.Holder)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.Duration / time.Second))
	l.Spec.RenewTime = &now
}
