package quota

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Violation is one quota key a request would take past a quota's overall.
type Violation struct {
	// Quota is the FederatedResourceQuota, "namespace/name".
	Quota string
	Key   corev1.ResourceName
	// Requested is what the request adds; Used what the namespace uses
	// already; Overall the quota's limit.
	Requested, Used, Overall resource.Quantity
}

// Left is what the quota still grants of the key (never negative: a quota
// lowered below what is used has nothing left).
func (v Violation) Left() resource.Quantity {
	left := v.Overall.DeepCopy()
	left.Sub(v.Used)
	if left.Sign() < 0 {
		return *resource.NewQuantity(0, v.Overall.Format)
	}
	return left
}

// String is e.g. "FederatedResourceQuota tenant/team: cpu: requested 8, used 60 of 64, 4 left".
func (v Violation) String() string {
	left := v.Left()
	return fmt.Sprintf("FederatedResourceQuota %s: %s: requested %s, used %s of %s, %s left",
		v.Quota, v.Key, v.Requested.String(), v.Used.String(), v.Overall.String(), left.String())
}

// Check lists the keys of overall that a request would take past it: those
// the request grows (a positive amount) and for which used + request is
// more than overall. Keys the request does not grow never fail, even when
// the namespace is over the quota already (a quota lowered below what is
// used does not block what shrinks or stays). quotaName names the quota in
// the violations. The result is sorted by key.
func Check(quotaName string, overall, used, request corev1.ResourceList) []Violation {
	var out []Violation
	for _, key := range sortedNames(overall) {
		req, ok := request[key]
		if !ok || req.Sign() <= 0 {
			continue
		}
		total := used[key].DeepCopy()
		total.Add(req)
		if limit := overall[key]; total.Cmp(limit) > 0 {
			out = append(out, Violation{Quota: quotaName, Key: key, Requested: req.DeepCopy(), Used: used[key].DeepCopy(), Overall: limit.DeepCopy()})
		}
	}
	return out
}

// ExceededError refuses a request that would take a namespace past one or
// more of its quotas. Its message names each quota, key, request and what
// is left.
type ExceededError struct {
	Violations []Violation
}

func (e *ExceededError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}
