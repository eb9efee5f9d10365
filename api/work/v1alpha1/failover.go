package v1alpha1

// Failover on bindings: eviction from NoExecute-tainted members, graceful
// eviction tasks, failback (see docs/failover.md).
const (
	// ConditionEvictionThrottled is True while an eviction the binding is due
	// waits because storm protection slowed or stopped evictions; False (or
	// absent) otherwise.
	ConditionEvictionThrottled = "EvictionThrottled"

	// EvictionThrottledReason: more than the threshold share of members is
	// unhealthy, so evictions go at the secondary rate, or not at all.
	EvictionThrottledReason = "EvictionThrottled"
	// EvictionNotThrottledReason: evictions go at the normal rate.
	EvictionNotThrottledReason = "NotThrottled"

	// EvictionReasonTaintUntolerated is the reason of a graceful eviction task
	// created because the member has a NoExecute taint the binding does not
	// tolerate (or no longer tolerates: its tolerationSeconds passed).
	EvictionReasonTaintUntolerated = "TaintUntolerated"
	// EvictionProducerTaintManager is the producer of those tasks.
	EvictionProducerTaintManager = "flotilla-taint-manager"

	// EvictionReasonApplicationFailure is the reason of a graceful eviction
	// task created because the workload stayed Unhealthy on the member past
	// failover.application.decisionConditions.tolerationSeconds (Karmada's
	// reason).
	EvictionReasonApplicationFailure = "ApplicationFailure"
	// EvictionProducerApplicationFailover is the producer of those tasks.
	EvictionProducerApplicationFailover = "flotilla-application-failover"

	// EvictedEvent is the event reason on a binding evicted from a member;
	// PurgedEvent the reason when its copy there is released (task removed).
	EvictedEvent = "Evicted"
	PurgedEvent  = "EvictionTaskRemoved"
	// StatePreservationFailedEvent: an application failover's
	// statePreservation rule could not be read from the failed copy; the
	// eviction waits and is tried again.
	StatePreservationFailedEvent = "StatePreservationFailed"

	// FailbackAnnotation on a binding lists, comma-separated, the members it
	// was evicted from under a policy with failover.cluster.failback: when
	// such a member recovers, the binding is rebalanced and the member's name
	// removed from the list.
	FailbackAnnotation = "failover.flotilla.io/failback-from"
	// FailbackTriggeredAtAnnotation on a binding is when (RFC 3339) a member
	// of its FailbackAnnotation recovered: the scheduler places the binding
	// from scratch when it is later than status.lastScheduledTime, as for
	// spec.rescheduleTriggeredAt, which stays the user's.
	FailbackTriggeredAtAnnotation = "failover.flotilla.io/failback-triggered-at"
)
