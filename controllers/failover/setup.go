// Package failover wires flotilla-manager's failover controllers and their
// flags (docs/failover.md): member health (controllers/health),
// ClusterTaintPolicies and their defaults (controllers/taintpolicy), storm
// detection (controllers/pacing), the eviction controller — the evict, purge
// and fail-back phases of a binding's life: taint manager, application
// failover, purging and failback (controllers/binding) — and the pre-drain
// hook on a leaving member's Machines (controllers/drainhook).
package failover

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/drainhook"
	"github.com/flotilla-io/flotilla/controllers/health"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/controllers/taintpolicy"
	internalhealth "github.com/flotilla-io/flotilla/internal/health"
	"github.com/flotilla-io/flotilla/internal/throttle"
)

// Options are the failover flags of flotilla-manager.
type Options struct {
	// GracePeriod is how long a member stays unreachable or without an
	// available control plane before the default policies taint it NoExecute.
	GracePeriod time.Duration
	// DefaultTaintPolicies creates the default ClusterTaintPolicies at startup.
	DefaultTaintPolicies bool
	// WorkersThreshold is the share of healthy worker Machines below which
	// WorkersAvailable is False.
	WorkersThreshold float64
	// Pacing of evictions and failback.
	Pacing throttle.Config
	// GracefulEvictionTimeout is the gracePeriodSeconds of eviction tasks.
	GracefulEvictionTimeout time.Duration
	// DrainTimeout bounds the pre-drain hook on a leaving member's Machines;
	// flotilla-manager passes --member-drain-timeout.
	DrainTimeout time.Duration
	// Now is the clock of every failover controller; time.Now when nil (tests).
	Now func() time.Time
}

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.GracePeriod, "failover-grace-period", 5*time.Minute, "How long a member stays unreachable, or without an available control plane, before the default ClusterTaintPolicies add the NoExecute taint that moves its workloads away (the NoSchedule taint comes at once).")
	fs.BoolVar(&o.DefaultTaintPolicies, "default-taint-policies", true, "Create the default ClusterTaintPolicies (label taintpolicy.flotilla.io/default) at startup when absent; unedited defaults follow --failover-grace-period.")
	fs.Float64Var(&o.WorkersThreshold, "workers-healthy-threshold", internalhealth.DefaultWorkersThreshold, "Share (0-1] of a member's worker Machines that must be healthy for WorkersAvailable to be True.")
	fs.Float64Var(&o.Pacing.Rate, "resource-eviction-rate", throttle.DefaultRate, "Bindings evicted per second (and failback rebalances per second); 0 means no limit.")
	fs.Float64Var(&o.Pacing.SecondaryRate, "secondary-resource-eviction-rate", throttle.DefaultSecondaryRate, "Bindings evicted per second while more than --unhealthy-cluster-threshold of members are unhealthy; 0 stops evictions then.")
	fs.Float64Var(&o.Pacing.UnhealthyThreshold, "unhealthy-cluster-threshold", throttle.DefaultUnhealthyThreshold, "Share (between 0 and 1) of enrolled members whose Ready is not True above which evictions go at the secondary rate; with every member unhealthy nothing is evicted.")
	fs.DurationVar(&o.GracefulEvictionTimeout, "graceful-eviction-timeout", 10*time.Minute, "How long an evicted member's copy is kept (purge mode Gracefully) waiting for its replacement to be healthy, or (Directly) for its removal to be confirmed.")
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 10 * time.Minute
	}
	if o.GracefulEvictionTimeout <= 0 {
		o.GracefulEvictionTimeout = 10 * time.Minute
	}
}

// SetupWithManager registers every failover controller with mgr.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, o Options) error {
	o.defaults()
	if err := (&health.Reconciler{WorkersThreshold: o.WorkersThreshold, Now: o.Now}).SetupWithManager(mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up member health: %w", err)
	}
	if err := (&taintpolicy.Reconciler{Now: o.Now}).SetupWithManager(mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up ClusterTaintPolicies: %w", err)
	}
	if o.DefaultTaintPolicies {
		if err := mgr.Add(&taintpolicy.Defaults{Client: mgr.GetClient(), Grace: o.GracePeriod}); err != nil {
			return fmt.Errorf("set up the default ClusterTaintPolicies: %w", err)
		}
	}
	storm := &pacing.Storm{Config: o.Pacing, Settle: o.GracePeriod, Now: o.Now}
	if err := storm.SetupWithManager(mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up storm detection: %w", err)
	}
	evictions := &pacing.Queue{Throttle: throttle.New(o.Pacing), Fleet: storm.Fleet, Now: o.Now}
	failbacks := &pacing.Queue{Throttle: throttle.New(throttle.Config{Rate: o.Pacing.Rate, UnhealthyThreshold: 1}), Now: o.Now}
	taintManager := &binding.Evictor{Queue: evictions, Failbacks: failbacks, GracePeriod: o.GracefulEvictionTimeout, Now: o.Now}
	if err := taintManager.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up the eviction controller: %w", err)
	}
	if err := (&drainhook.Reconciler{DrainTimeout: o.DrainTimeout, Now: o.Now}).SetupWithManager(mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up the drain hook: %w", err)
	}
	return nil
}
