package capacity

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// admits says whether the group's Nodes accept a Pod of r: its nodeSelector
// and required node affinity match the labels, and it tolerates every
// NoSchedule and NoExecute taint.
func (g *group) admits(r *Requirement) bool {
	var tolerations []corev1.Toleration
	if r.claim != nil {
		tolerations = r.claim.Tolerations
	}
	for i := range g.taints {
		if !Tolerates(tolerations, &g.taints[i]) {
			return false
		}
	}
	if r.claim == nil {
		return true
	}
	for k, v := range r.claim.NodeSelector {
		if got, ok := g.labels[k]; !ok || got != v {
			return false
		}
	}
	if a := r.claim.HardNodeAffinity; a != nil {
		return slices.ContainsFunc(a.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool {
			return termMatches(&t, g.labels)
		})
	}
	return true
}

// termMatches ANDs the term's requirements. As in Kubernetes, an empty term
// matches nothing. matchFields select Nodes by name, which a model that groups
// Nodes does not keep: such a term cannot be shown to match, so it does not.
func termMatches(t *corev1.NodeSelectorTerm, labels map[string]string) bool {
	if len(t.MatchFields) > 0 || len(t.MatchExpressions) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		if !RequirementMatches(&t.MatchExpressions[i], labels[t.MatchExpressions[i].Key], hasKey(labels, t.MatchExpressions[i].Key)) {
			return false
		}
	}
	return true
}

func hasKey(labels map[string]string, key string) bool {
	_, ok := labels[key]
	return ok
}

// RequirementMatches evaluates one node selector requirement against a value
// that is present or not, with Kubernetes' label semantics: NotIn and
// DoesNotExist match an absent key, Gt and Lt compare integers.
func RequirementMatches(req *corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(req.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(req.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if req.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	default:
		return false
	}
}

// Tolerates says whether any of tolerations tolerates taint, with Kubernetes'
// rules: an empty effect matches every effect, an empty key with Exists
// matches every taint, an empty operator means Equal, and Lt/Gt compare the
// values as integers. It is shared by Node-level fit and member-level taints.
func Tolerates(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tolerations {
		if tolerates(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

func tolerates(t *corev1.Toleration, taint *corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		return t.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpLt, corev1.TolerationOpGt:
		want, err1 := strconv.ParseInt(t.Value, 10, 64)
		have, err2 := strconv.ParseInt(taint.Value, 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if t.Operator == corev1.TolerationOpLt {
			return have < want
		}
		return have > want
	default:
		return false
	}
}
