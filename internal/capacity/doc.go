// Package capacity answers one question, node by node and exactly: how many
// replicas of a ReplicaRequirements fit in a member's CapacityModel?
//
// A CapacityModel groups a member's schedulable Nodes into classes of identical
// labels, taints and free resources. A replica fits on a Node when the Node
// admits its NodeClaim (nodeSelector, required node affinity, tolerations of
// NoSchedule/NoExecute taints) and every requested resource, plus one "pods",
// is free. The fit of a member is
//
//	sum over admitting groups of count * min over requested resources floor(free/request)
//
// Quantities are compared in milli-units as int64, so a Node's free amount of
// any resource is bounded by about 9.2e15 whole units (9 PB of memory).
//
// The package is pure (no API calls, no clocks) so the hub's scheduler and the
// member's estimator share it; Place lets the scheduler's assumed ledger hold
// back capacity it has just handed out before the estimator sees it.
package capacity
