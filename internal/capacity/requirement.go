package capacity

import (
	corev1 "k8s.io/api/core/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// podsPerReplica is what every replica consumes of the "pods" resource,
// whatever its requests say: one Pod.
const podsPerReplica = 1000 // milli-units

// Requirement is a ReplicaRequirements compiled for repeated fits: requests in
// milli-units, sorted, always including one "pods". Build it once per
// scheduling decision and reuse it for every member.
type Requirement struct {
	requests []amount
	claim    *workv1alpha1.NodeClaim
}

// NewRequirement compiles rr; nil means a replica that requests nothing but
// its Pod slot and may run on any Node.
func NewRequirement(rr *workv1alpha1.ReplicaRequirements) *Requirement {
	r := &Requirement{}
	var requests corev1.ResourceList
	if rr != nil {
		requests = rr.ResourceRequest
		r.claim = rr.NodeClaim
	}
	r.requests = amountsOf(requests, true)
	r.requests = setAmount(r.requests, corev1.ResourcePods, podsPerReplica)
	return r
}

// setAmount replaces or inserts name in the sorted slice.
func setAmount(a []amount, name corev1.ResourceName, milli int64) []amount {
	for i := range a {
		if a[i].name == name {
			a[i].milli = milli
			return a
		}
	}
	a = append(a, amount{name: name, milli: milli})
	sortAmounts(a)
	return a
}
