// Package scheduling is flotilla-manager's scheduling controller: it places
// ResourceBindings and ClusterResourceBindings on members with the pure
// scheduler library (internal/scheduler) and writes the result, spec.clusters,
// with a Scheduled condition and the decision's explanation.
//
// Triggers: a binding's spec changing (replicas, placement, requirements,
// eviction tasks, rescheduleTriggeredAt), any MemberCluster change that can
// change a placement (labels, taints, cordon, readiness, API enablements,
// capacity model, deletion), a periodic retry of bindings that could not
// be placed, and the Wakeups sources (bindings waiting on quota, re-queued
// oldest first when quota frees). Decisions are serialised inside the scheduler so that each sees
// the capacity the previous one assumed.
package scheduling
