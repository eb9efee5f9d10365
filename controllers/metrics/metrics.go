// Package metrics holds flotilla-manager's own Prometheus series, in one
// place, registered in controller-runtime's registry so that the manager's
// metrics endpoint serves them next to controller-runtime's
// (controller_runtime_reconcile_*, workqueue_depth{name=…}, …).
// docs/operations.md lists them.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics endpoint authenticates and authorises each scrape against the
// hub (flotilla-manager --metrics-secure).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

var (
	// SchedulingDecisionDuration: one scheduling decision on the
	// controller path (snapshot and decision, without the API write), by
	// result: Success or the reason it was not placed.
	SchedulingDecisionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_scheduling_decision_duration_seconds",
		Help:    "Time of one scheduling decision (snapshot and decision, no API write), by result.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
	}, []string{"result"})

	// BindingsWaitingForPlacement: bindings whose last decision placed
	// less than their policy asks (PartiallyScheduled) or could not place
	// them (Unschedulable, NoClusterFit, QuotaExceeded, …), by that
	// Scheduled reason; each is decided again when room or quota frees.
	BindingsWaitingForPlacement = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_bindings_waiting_for_placement",
		Help: "Bindings placed short of what their policy asks, or not placed, waiting for room or quota, by the Scheduled condition's reason.",
	}, []string{"reason"})

	// QuotaRefusals: scheduling decisions refused by a
	// FederatedResourceQuota, by namespace.
	QuotaRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_quota_refusals_total",
		Help: "Scheduling decisions refused because a FederatedResourceQuota would be exceeded, by namespace.",
	}, []string{"namespace"})

	// WorkApplyDuration: one application of a Work to a Push member.
	WorkApplyDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_work_apply_duration_seconds",
		Help:    "Time to apply one Work to its Push-mode member, by member.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	}, []string{"member"})

	// RenderToApplied: from the binding controller writing a Work's
	// manifests to the member holding them all (first Applied=True of that
	// generation), by member.
	RenderToApplied = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_work_render_to_applied_seconds",
		Help:    "Time from a Work's manifests being written on the hub to all of them applied in its member, by member.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"member"})

	// RenderToHealthy: the same to every object of the Work healthy
	// (first Available=True of that generation).
	RenderToHealthy = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flotilla_work_render_to_healthy_seconds",
		Help:    "Time from a Work's manifests being written on the hub to all its objects healthy in its member, by member.",
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
	}, []string{"member"})

	// MemberApplyErrors: Works not applied, by member and the Applied
	// condition's reason (ApplyFailed, Conflict, APINotEnabled,
	// MemberUnreachable, AccessRefused, …).
	MemberApplyErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_member_apply_errors_total",
		Help: "Applications of a Work to a Push-mode member that left it not applied, by member and reason.",
	}, []string{"member", "reason"})

	// MemberUnreachable: 1 while the hub's last request to the member got
	// no answer (memberclient.Health).
	MemberUnreachable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flotilla_member_unreachable",
		Help: "1 while the hub's last request to a Push-mode member got no answer.",
	}, []string{"member"})

	// Evictions: bindings taken off a member, by reason (TaintUntolerated,
	// ApplicationFailure) and purge mode.
	Evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_evictions_total",
		Help: "Bindings evicted from a member, by reason (a NoExecute taint: TaintUntolerated; application failover: ApplicationFailure) and purge mode.",
	}, []string{"reason", "purge_mode"})

	// EvictionMode: storm protection's state: 0 Normal, 1 Slowed, 2 Stopped.
	EvictionMode = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_eviction_mode",
		Help: "Storm protection: 0 evictions at the primary rate, 1 slowed to the secondary rate, 2 stopped.",
	})

	// UnhealthyMembers: the storm detector's last count.
	UnhealthyMembers = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flotilla_unhealthy_members",
		Help: "Enrolled members whose Ready condition is not True, as storm protection last counted them.",
	})
)

func init() {
	metrics.Registry.MustRegister(SchedulingDecisionDuration, BindingsWaitingForPlacement, QuotaRefusals, WorkApplyDuration, RenderToApplied, RenderToHealthy,
		MemberApplyErrors, MemberUnreachable, Evictions, EvictionMode, UnhealthyMembers)
}

// Since is the seconds from t to now, for Observe.
func Since(t time.Time) float64 { return time.Since(t).Seconds() }
