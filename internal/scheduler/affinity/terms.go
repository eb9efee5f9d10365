package affinity

import (
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TermsOf lists the affinity terms of a placement in the order the scheduler
// tries them: the ordered clusterAffinities, or the single clusterAffinity,
// or one term matching every member.
func TermsOf(p *policyv1alpha1.Placement) ([]*Term, error) {
	if p == nil {
		t, _ := Compile("", nil)
		return []*Term{t}, nil
	}
	if len(p.ClusterAffinities) > 0 {
		if p.ClusterAffinity != nil {
			return nil, fmt.Errorf("clusterAffinity and clusterAffinities are mutually exclusive")
		}
		terms := make([]*Term, 0, len(p.ClusterAffinities))
		seen := map[string]bool{}
		for i := range p.ClusterAffinities {
			a := &p.ClusterAffinities[i]
			if seen[a.AffinityName] {
				return nil, fmt.Errorf("affinityName %q is used twice", a.AffinityName)
			}
			seen[a.AffinityName] = true
			t, err := Compile(a.AffinityName, &a.ClusterAffinity)
			if err != nil {
				return nil, err
			}
			terms = append(terms, t)
		}
		return terms, nil
	}
	t, err := Compile("", p.ClusterAffinity)
	if err != nil {
		return nil, err
	}
	return []*Term{t}, nil
}
