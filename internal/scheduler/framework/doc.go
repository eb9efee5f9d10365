// Package framework holds what the scheduler's plugins and its engine share:
// an immutable Snapshot of compiled member views, the per-decision Cycle that
// plugins read, and the small Filter and Score plugin interfaces.
//
// Nothing here talks to an API server; a Snapshot is built from plain
// MemberCluster structs and never changes after NewSnapshot returns.
package framework
