package clusteraffinity

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Field keys a FieldSelector may name.
const (
	ProviderField = "provider"
	RegionField   = "region"
	ZoneField     = "zone"
)

// fieldsMatch evaluates the requirements of a field selector, ANDed.
func fieldsMatch(selector *policyv1alpha1.FieldSelector, member *clusterv1alpha1.MemberCluster) (bool, error) {
	for i, req := range selector.MatchExpressions {
		if err := validateRequirement(req); err != nil {
			return false, fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
		var ok bool
		switch req.Key {
		case ProviderField:
			ok = singleValueMatches(req, member.Spec.Provider)
		case RegionField:
			ok = singleValueMatches(req, member.Spec.Region)
		case ZoneField:
			ok = zonesMatch(req, memberZones(member))
		default:
			return false, fmt.Errorf("matchExpressions[%d]: unknown key %q, want %s, %s or %s",
				i, req.Key, ProviderField, RegionField, ZoneField)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// validateRequirement applies the rules of label requirements: In and NotIn
// need values, Exists and DoesNotExist take none. Gt and Lt compare numbers,
// which provider, region and zone are not.
func validateRequirement(req policyv1alpha1.FieldSelectorRequirement) error {
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			return fmt.Errorf("operator %s on %q needs at least one value", req.Operator, req.Key)
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) != 0 {
			return fmt.Errorf("operator %s on %q takes no values", req.Operator, req.Key)
		}
	default:
		return fmt.Errorf("operator %q on %q is not supported, want In, NotIn, Exists or DoesNotExist", req.Operator, req.Key)
	}
	return nil
}

// singleValueMatches treats an empty field as absent, like a missing label:
// NotIn and DoesNotExist match it, In and Exists do not.
func singleValueMatches(req policyv1alpha1.FieldSelectorRequirement, value string) bool {
	present := value != ""
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	default: // DoesNotExist; validateRequirement rejected the rest
		return !present
	}
}

// zonesMatch follows Karmada's multi-zone rule: In needs any zone listed,
// NotIn needs none listed, Exists needs a zone, DoesNotExist needs none.
func zonesMatch(req policyv1alpha1.FieldSelectorRequirement, zones []string) bool {
	listed := slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(req.Values, z) })
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return listed
	case corev1.NodeSelectorOpNotIn:
		return !listed
	case corev1.NodeSelectorOpExists:
		return len(zones) > 0
	default: // DoesNotExist
		return len(zones) == 0
	}
}

// memberZones merges spec.zone and spec.zones: a member may set either.
func memberZones(member *clusterv1alpha1.MemberCluster) []string {
	zones := slices.Clone(member.Spec.Zones)
	if member.Spec.Zone != "" && !slices.Contains(zones, member.Spec.Zone) {
		zones = append(zones, member.Spec.Zone)
	}
	return zones
}
