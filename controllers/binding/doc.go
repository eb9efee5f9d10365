// Package binding is the life of a ResourceBinding (and of a
// ClusterResourceBinding) on the hub. The detector (controllers/detector)
// creates a binding from a template and the policy that claims it; from
// then on, what happens to the binding happens here, in these phases:
//
//	phase      controller  file          writes
//	place      Placer      place.go      spec.clusters; status Scheduled, schedulingDecision,
//	                                     schedulerObservedGeneration, lastScheduledTime
//	evict      Evictor     evict.go      adds spec.gracefulEvictionTasks entries and failback
//	                                     members; status EvictionThrottled
//	purge      Evictor     purge.go      removes spec.gracefulEvictionTasks entries
//	fail back  Evictor     failback.go   the failback annotations (the ask to rebalance)
//	render     Renderer    render.go     the binding's Works and its finalizer; status Rendered
//	aggregate  Aggregator  aggregate.go  status aggregatedStatus, replica counts,
//	                                     FullyApplied, StatusAggregated
//
// The data flows template → binding → (place) spec.clusters → (render) one
// Work per member → the member (controllers/execution applies it, or the
// member's agent pulls it) → the Work's status → (aggregate) the binding's
// status. Evictions feed back into place: the evict phase only adds a
// member's task, and the next placement takes the member out and puts its
// replicas elsewhere; purge removes the task when the purge mode allows,
// which lets render remove the member's Work.
//
// Each field has exactly one writer phase, and every spec write carries an
// optimistic lock (the resourceVersion read): a phase that lost a race reads
// again and decides again, never writes over another. Each phase writes the
// status fields it owns, its condition among them, in one server-side apply
// as its own field manager (applyStatus, binding.go): never half written,
// and with nothing to lock against.
//
// The phases are controllers of their own because what starts them and
// how fast they may go differ: place is serialised through the scheduler
// library (internal/scheduler), whose held capacity and quota charges each
// decision must see; evict and fail back go one binding at a time at the
// eviction rate (controllers/pacing), slowed or stopped in a storm; render
// follows templates, override policies and dependencies; aggregate follows
// the Works' status, and tells the scheduler's held-capacity ledger which
// members applied the Works of a decision (reportApplied, place_holds.go).
// Shared by all: the binding kinds, NewBinding, the
// watch mappings Requests and WorkToBinding (binding.go).
package binding
