package capacity

import (
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// amount is a quantity of one resource in milli-units. Slices of amounts are
// kept sorted by name so that requests and free lists merge in one pass
// without maps: models are copied on every Place, so they must stay cheap.
type amount struct {
	name  corev1.ResourceName
	milli int64
}

// unlimited stands for "no bound" in per-node and per-member fits.
const unlimited = math.MaxInt64

// amountsOf converts a ResourceList, dropping non-positive quantities when
// dropNonPositive is set (a zero request constrains nothing) and clamping
// negative free amounts to zero (an overcommitted node has nothing free).
func amountsOf(list corev1.ResourceList, dropNonPositive bool) []amount {
	out := make([]amount, 0, len(list)+1)
	for name, q := range list {
		v := q.MilliValue()
		if v <= 0 {
			if dropNonPositive {
				continue
			}
			v = 0
		}
		out = append(out, amount{name: name, milli: v})
	}
	sortAmounts(out)
	return out
}

func sortAmounts(a []amount) {
	slices.SortFunc(a, func(x, y amount) int { return strings.Compare(string(x.name), string(y.name)) })
}

// perNode is how many replicas needing req fit in free: min over requested
// resources of floor(free/request). A resource missing from free counts as
// zero free. Both slices are sorted by name.
func perNode(free, req []amount) int64 {
	fit := int64(unlimited)
	j := 0
	for _, r := range req {
		for j < len(free) && free[j].name < r.name {
			j++
		}
		if j == len(free) || free[j].name != r.name {
			return 0
		}
		if k := free[j].milli / r.milli; k < fit {
			fit = k
		}
		if fit == 0 {
			return 0
		}
	}
	return fit
}

// subtract returns free less n*req, clamped at zero. The result is a new
// slice: models are shared between readers and never mutated.
func subtract(free, req []amount, n int64) []amount {
	out := slices.Clone(free)
	j := 0
	for _, r := range req {
		for j < len(out) && out[j].name < r.name {
			j++
		}
		if j == len(out) || out[j].name != r.name {
			continue
		}
		used := saturatingMul(r.milli, n)
		if used >= out[j].milli {
			out[j].milli = 0
		} else {
			out[j].milli -= used
		}
	}
	return out
}

// saturatingMul multiplies non-negative numbers, capping at unlimited.
func saturatingMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > unlimited/b {
		return unlimited
	}
	return a * b
}

// saturatingAdd adds non-negative numbers, capping at unlimited.
func saturatingAdd(a, b int64) int64 {
	if a > unlimited-b {
		return unlimited
	}
	return a + b
}
