package eviction

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/throttle"
)

// fleetKey is the one request the storm detector reconciles: the fleet.
var fleetKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "fleet"}}

// Storm counts unhealthy members (Ready=False) among the enrolled members
// that are not being deleted, for storm protection, and records an event on each
// unhealthy member when evictions slow down or stop, and when they resume.
type Storm struct {
	Client   client.Client
	Recorder events.EventRecorder
	Config   throttle.Config

	mu    sync.Mutex
	fleet throttle.Fleet
	mode  throttle.Mode
}

// Fleet is the latest count.
func (s *Storm) Fleet() throttle.Fleet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fleet
}

// SetupWithManager reconciles the fleet on member creation, deletion and
// readiness changes.
func (s *Storm) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	if s.Recorder == nil {
		s.Recorder = mgr.GetEventRecorder("flotilla-eviction")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("eviction-storm").
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{fleetKey}
		}), builder.WithPredicates(readinessChanged())).
		WithOptions(options).
		Complete(s)
}

// Reconcile recounts the fleet.
func (s *Storm) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	list := &clusterv1alpha1.MemberClusterList{}
	if err := s.Client.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("list members to count the unhealthy: %w", err)
	}
	var f throttle.Fleet
	var unhealthy []*clusterv1alpha1.MemberCluster
	for i := range list.Items {
		m := &list.Items[i]
		if !m.DeletionTimestamp.IsZero() || !conditions.IsTrue(m, clusterv1alpha1.ConditionEnrolled) {
			continue // leaving, or still joining: neither says anything of a storm
		}
		f.Total++
		if Unhealthy(m) {
			f.Unhealthy++
			unhealthy = append(unhealthy, m)
		}
	}
	s.mu.Lock()
	before := s.mode
	s.fleet, s.mode = f, s.Config.ModeOf(f)
	after := s.mode
	s.mu.Unlock()

	if before == after {
		return ctrl.Result{}, nil
	}
	why := s.Config.Describe(f)
	ctrl.LoggerFrom(ctx).Info("Eviction pace changed", "mode", after.String(), "why", why)
	for _, m := range unhealthy {
		if after == throttle.Normal {
			s.Recorder.Eventf(m, nil, corev1.EventTypeNormal, clusterv1alpha1.EvictionResumedReason, "Evict", "%s", why)
		} else {
			s.Recorder.Eventf(m, nil, corev1.EventTypeWarning, clusterv1alpha1.EvictionThrottledReason, "Evict",
				"%s; the hub is more likely partitioned from the fleet than the fleet down", why)
		}
	}
	return ctrl.Result{}, nil
}

// Unhealthy: the member's Ready condition is False.
func Unhealthy(m *clusterv1alpha1.MemberCluster) bool {
	return conditions.IsFalse(m, clusterv1alpha1.ConditionReady)
}

func readinessChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && (Unhealthy(oldM) != Unhealthy(newM) || oldM.DeletionTimestamp.IsZero() != newM.DeletionTimestamp.IsZero() ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionEnrolled) != conditions.IsTrue(newM, clusterv1alpha1.ConditionEnrolled))
		},
	}
}
