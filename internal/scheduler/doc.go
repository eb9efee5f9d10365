// Package scheduler places bindings on member clusters. It is a pure library
// (no controller-runtime, no client-go): the controller builds a Snapshot
// from MemberClusters it has listed, turns each ResourceBinding into an Input
// and writes back the Result; everything in between is here.
//
// Data flow of one decision (Scheduler.Schedule or Preview):
//
//	Snapshot ── members sorted by name, compiled once (framework.Snapshot)
//	   │
//	measure ─── each member's available replicas of this binding: capacity.Fit
//	   │        over its capacity model less what the assumed ledger holds back
//	   │        for other bindings, plus the binding's own replicas there
//	filter ──── plugins.DefaultFilters, once per member: deleting, being evicted,
//	   │        not Ready, cordoned, untolerated NoSchedule/NoExecute taint, API not
//	   │        served, static weight 0, no capacity model (dynamic/Aggregated),
//	   │        too small for a Duplicated copy; a member the binding already runs
//	   │        on that is not Ready, cordoned or tainted is held instead: it keeps
//	   │        its replicas and takes no more (eviction moves them, not the scheduler)
//	terms ───── for each affinity term in order (from the one in force last
//	   │        time unless rebalancing): ClusterAffinity narrows the candidates,
//	   │        then score → select → assign; the first term that places the
//	   │        binding is kept, else the next is tried
//	score ───── plugins.DefaultScorers: Locality (already running there) and
//	   │        Capacity (more room), weighted; ties broken by name
//	select ──── package spread: spread constraints by cluster, region, zone,
//	   │        provider or label, min/max groups, enough capacity for Divided
//	assign ──── package division: Duplicated copies, or Webster/Sainte-Laguë
//	   │        division by static weight, available replicas (dynamic) or
//	   │        fewest members (Aggregated); ties go to the higher weight, then
//	   │        the roomier member, then the name; least movement (scale-up adds
//	   │        only new replicas, scale-down removes only) unless rebalancing
//	quota ───── the QuotaChecker may refuse the replicas the placement adds
//	   │        (a BindingQuota sees the whole placement, and Schedule tells it
//	   │        what it commits, under the same lock: internal/quota/tracker)
//	   │
//	Result ──── TargetClusters sorted by name, the affinity term in force, and an
//	            Explanation: the terms tried and, built on demand by Members(),
//	            per member the plugin and reason that dropped it, its scores,
//	            its available replicas and its replicas.
//
// Schedule then records the replicas it added in the assumed ledger (package
// assumed), so that the next decision against the same snapshot does not
// hand out the same capacity; Preview writes nothing. Schedule serialises
// decide-and-commit, so concurrent callers never both take the same room.
//
// Without spread constraints every feasible member is selected and scores
// only explain; with them, scores decide which groups and members are kept.
//
// Failures are *Error values whose Reason is the binding's Scheduled condition
// reason: NoClusterFit (no member passes the filters, or spread minGroups
// cannot be met), Unschedulable (members pass but lack capacity),
// QuotaExceeded, SchedulerError (an invalid placement).
package scheduler
