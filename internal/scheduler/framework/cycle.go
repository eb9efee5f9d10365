package framework

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// CapacityUnknown marks a member without a capacity model in Cycle.Available.
const CapacityUnknown int64 = -1

// Cycle is everything one scheduling decision knows about the binding, read
// by plugins. The engine fills it; plugins must not modify it.
type Cycle struct {
	Snapshot *Snapshot

	// Replicas is the binding's desired replica count.
	Replicas int64
	Strategy Strategy

	// APIVersion and Kind of the binding's resource template, and by member
	// index whether the member serves them.
	APIVersion string
	Kind       string
	Served     []bool

	// Tolerations of the placement, matched against member taints.
	Tolerations []corev1.Toleration

	// EvictedFrom lists members the binding is being evicted from.
	EvictedFrom []string

	// Current is the binding's placement before this decision.
	Current map[string]int64

	// Weights holds each member's static weight by member index (StaticWeighted only).
	Weights []int64

	// Available holds, by member index, how many replicas of the binding the
	// member can hold in total (its own current replicas included), after
	// capacity assumed for other bindings; CapacityUnknown without a model.
	Available []int64
}

// Holds says whether the binding's current placement includes the named
// member (with replicas, or without for a template that has none).
func (c *Cycle) Holds(name string) bool {
	_, ok := c.Current[name]
	return ok
}

// Evicted says whether the binding is being evicted from the named member.
func (c *Cycle) Evicted(name string) bool { return slices.Contains(c.EvictedFrom, name) }
