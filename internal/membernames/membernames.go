// Package membernames finds the member names a policy gives that are not
// members of the fleet. A misspelt or not-yet-enrolled name otherwise shows
// up only as "not in clusterAffinity.clusterNames" on every real member; the
// scheduler (the binding's Scheduled condition), the policy detector (the
// policy's Propagating condition) and kubectl-flotilla (explain, preview) all
// say it the same way, from here.
package membernames

import (
	"fmt"
	"strings"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Unknown is one field of a policy and the names in it that are not members,
// in the order the field gives them.
type Unknown struct {
	// Field is where the names are, e.g. "clusterAffinity.clusterNames".
	Field string
	Names []string
}

// String says it for a user: "clusterAffinity.clusterNames names nosuch,
// which is not a member of the fleet".
func (u Unknown) String() string {
	if len(u.Names) == 1 {
		return fmt.Sprintf("%s names %s, which is not a member of the fleet", u.Field, u.Names[0])
	}
	return fmt.Sprintf("%s names %s, which are not members of the fleet", u.Field, strings.Join(u.Names, ", "))
}

// Message joins the findings with "; ", or is "" for none.
func Message(found []Unknown) string {
	parts := make([]string, len(found))
	for i, u := range found {
		parts[i] = u.String()
	}
	return strings.Join(parts, "; ")
}

// InPlacement finds the clusterNames of a placement's cluster affinity, its
// ordered clusterAffinities (and their overflow terms) and its static weight
// list that isMember does not know. exclude lists are not reported: excluding
// a cluster that is not there is harmless.
func InPlacement(p *policyv1alpha1.Placement, isMember func(string) bool) []Unknown {
	if p == nil {
		return nil
	}
	var found []Unknown
	add := func(field string, names []string) {
		if u := unknownIn(field, names, isMember); u != nil {
			found = append(found, *u)
		}
	}
	if a := p.ClusterAffinity; a != nil {
		add("clusterAffinity.clusterNames", a.ClusterNames)
	}
	for _, t := range p.ClusterAffinities {
		add(fmt.Sprintf("clusterAffinities[%s].clusterNames", t.AffinityName), t.ClusterNames)
		for _, o := range t.OverflowAffinities {
			add(fmt.Sprintf("clusterAffinities[%s].overflowAffinities[%s].clusterNames", t.AffinityName, o.AffinityName), o.ClusterNames)
		}
	}
	if rs := p.ReplicaScheduling; rs != nil && rs.WeightPreference != nil {
		for i, w := range rs.WeightPreference.StaticWeightList {
			add(fmt.Sprintf("staticWeightList[%d].targetCluster.clusterNames", i), w.TargetCluster.ClusterNames)
		}
	}
	return found
}

// InOverride finds the targetCluster.clusterNames of an override policy's
// rules (and of its legacy top-level targetCluster) that isMember does not
// know.
func InOverride(spec *policyv1alpha1.OverrideSpec, isMember func(string) bool) []Unknown {
	if spec == nil {
		return nil
	}
	var found []Unknown
	if t := spec.TargetCluster; t != nil {
		if u := unknownIn("targetCluster.clusterNames", t.ClusterNames, isMember); u != nil {
			found = append(found, *u)
		}
	}
	for i, r := range spec.OverrideRules {
		if r.TargetCluster == nil {
			continue
		}
		if u := unknownIn(fmt.Sprintf("overrideRules[%d].targetCluster.clusterNames", i), r.TargetCluster.ClusterNames, isMember); u != nil {
			found = append(found, *u)
		}
	}
	return found
}

// Set is isMember over a list of member names.
func Set(names []string) func(string) bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return func(name string) bool { return set[name] }
}

func unknownIn(field string, names []string, isMember func(string) bool) *Unknown {
	var unknown []string
	seen := map[string]bool{}
	for _, n := range names {
		if !isMember(n) && !seen[n] {
			seen[n] = true
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return &Unknown{Field: field, Names: unknown}
}
