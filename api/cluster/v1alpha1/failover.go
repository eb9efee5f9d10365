package v1alpha1

// Names, labels and annotations of member health, taint policies and the
// drain of a deleted Cluster (see docs/failover.md).
const (
	// AgentLeaseName is the Lease a Pull-mode member's flotilla-agent renews
	// in the member's execution namespace; its expiry makes the member
	// unreachable.
	AgentLeaseName = "flotilla-agent"

	// PolicyTaintsAnnotation on a MemberCluster lists, comma-separated as
	// key:Effect, the taints that ClusterTaintPolicies added. Only those are
	// ever removed by a policy: taints set by a user or by enrolment are left
	// alone.
	PolicyTaintsAnnotation = "taintpolicy.flotilla.io/managed-taints"

	// DefaultTaintPolicyLabel marks the ClusterTaintPolicies flotilla-manager
	// creates at startup. Delete or edit them to replace the defaults.
	DefaultTaintPolicyLabel = "taintpolicy.flotilla.io/default"

	// DrainHookAnnotation is Cluster API's pre-drain deletion hook that
	// flotilla-manager keeps on an enrolled member's Machines: a Machine being
	// deleted is not drained while it is there, so that the workloads evicted
	// from the member become Ready elsewhere before the member's nodes go.
	DrainHookAnnotation = "pre-drain.delete.hook.machine.cluster.x-k8s.io/flotilla"
	// TerminateHookAnnotation is Cluster API's pre-terminate deletion hook,
	// kept and released with DrainHookAnnotation. Cluster API skips drain and
	// pre-drain hooks when the whole Cluster is being deleted; the
	// pre-terminate hook still holds the Machine's infrastructure, and so the
	// Cluster's control plane, until the member has drained.
	TerminateHookAnnotation = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/flotilla"
	// DrainHookOwner is the value of DrainHookAnnotation and TerminateHookAnnotation.
	DrainHookOwner = "flotilla-manager"
)

// Reasons of the WorkersAvailable condition, and qualifications of the
// health conditions (Reachable, ControlPlaneAvailable, WorkersAvailable).
const (
	// WorkersAvailableReason: at least the threshold share of worker
	// Machines is healthy.
	WorkersAvailableReason = "WorkersAvailable"
	// WorkersDegradedReason: fewer than the threshold share of worker
	// Machines is healthy.
	WorkersDegradedReason = "WorkersDegraded"
	// WorkersUnknownReason: too many worker Machines report no health to tell.
	WorkersUnknownReason = "WorkersAvailabilityUnknown"
	// NoWorkersReason: the Cluster has no worker Machines to count.
	NoWorkersReason = "NoWorkers"

	// ClusterPausedReason: the CAPI Cluster is paused; a failing input is
	// reported Unknown, not False, so that no failover starts.
	ClusterPausedReason = "ClusterPaused"
	// RollingOutReason: the CAPI Cluster rolls out while its API answers; an
	// unavailable control plane or workers are reported Unknown, not False.
	RollingOutReason = "RollingOut"

	// LeaseExpiredReason: a Pull-mode member's agent has not renewed its Lease.
	LeaseExpiredReason = "LeaseExpired"
	// NoAgentLeaseReason: a Pull-mode member's agent has not created its Lease yet.
	NoAgentLeaseReason = "NoAgentLease"
)

// Event reasons of failover on MemberClusters.
const (
	// EvictionThrottledReason: the share of unhealthy members is above the
	// storm threshold, so evictions slow down or stop.
	EvictionThrottledReason = "EvictionThrottled"
	// EvictionResumedReason: the storm is over; evictions go at the normal rate.
	EvictionResumedReason = "EvictionResumed"
	// TaintAddedReason and TaintRemovedReason: a ClusterTaintPolicy changed the member's taints.
	TaintAddedReason   = "TaintAdded"
	TaintRemovedReason = "TaintRemoved"
	// FailbackReason: the member recovered and bindings evicted from it rebalance.
	FailbackReason = "Failback"
)
