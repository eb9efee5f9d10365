package pacing

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	"github.com/flotilla-io/flotilla/controllers/metrics"
	"github.com/flotilla-io/flotilla/internal/throttle"
)

// fleetKey is the one request the storm detector reconciles: the fleet.
var fleetKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "fleet"}}

// Storm counts unhealthy members (Ready not True) among the enrolled
// members whose health has been assessed, those being deleted included, for
// storm protection, and records
// an event on each unhealthy member when evictions slow down or stop, and
// when they resume. Until its first count the fleet is not Counted, and
// evictions wait. When a full disruption ends, evictions wait Settle more.
type Storm struct {
	Client   client.Client
	Recorder events.EventRecorder
	Config   throttle.Config
	// Settle is how long evictions still wait once a full disruption ends
	// (flotilla-manager: the failover grace period, the time a member has
	// to come back before its workloads move).
	Settle time.Duration
	// Now is time.Now when nil.
	Now func() time.Time

	mu    sync.Mutex
	fleet throttle.Fleet
	mode  throttle.Mode
}

func fullyDisrupted(f throttle.Fleet) bool { return f.Counted && f.Total > 0 && f.Unhealthy >= f.Total }

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
	f := throttle.Fleet{Counted: true}
	var unhealthy []*clusterv1alpha1.MemberCluster
	for i := range list.Items {
		m := &list.Items[i]
		if m.DeletionTimestamp.IsZero() && !conditions.IsTrue(m, clusterv1alpha1.ConditionEnrolled) ||
			conditions.Get(m, clusterv1alpha1.ConditionReady) == nil {
			continue // still joining, or health never assessed (nothing placed there yet): says nothing of a storm
		}
		f.Total++
		if Unhealthy(m) {
			f.Unhealthy++
			unhealthy = append(unhealthy, m)
		}
	}
	s.mu.Lock()
	before := s.mode
	f.SettlingUntil = s.fleet.SettlingUntil
	if fullyDisrupted(s.fleet) && !fullyDisrupted(f) {
		f.SettlingUntil = s.now().Add(s.Settle)
	}
	s.fleet, s.mode = f, s.Config.ModeOf(f)
	after := s.mode
	s.mu.Unlock()
	metrics.EvictionMode.Set(float64(after))
	metrics.UnhealthyMembers.Set(float64(f.Unhealthy))

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

func (s *Storm) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Unhealthy: the member's Ready condition is not True — False, Unknown or
// not yet written: a member whose health nobody knows vouches for nothing.
func Unhealthy(m *clusterv1alpha1.MemberCluster) bool {
	return !conditions.IsTrue(m, clusterv1alpha1.ConditionReady)
}

func readinessChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && (Unhealthy(oldM) != Unhealthy(newM) || oldM.DeletionTimestamp.IsZero() != newM.DeletionTimestamp.IsZero() ||
				(conditions.Get(oldM, clusterv1alpha1.ConditionReady) == nil) != (conditions.Get(newM, clusterv1alpha1.ConditionReady) == nil) ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionEnrolled) != conditions.IsTrue(newM, clusterv1alpha1.ConditionEnrolled))
		},
	}
}
