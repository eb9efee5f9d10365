package affinity_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/affinity"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func zones(z ...string) st.Option {
	return func(m *clusterv1alpha1.MemberCluster) { m.Spec.Zones = z }
}

func fields(reqs ...policyv1alpha1.FieldSelectorRequirement) *policyv1alpha1.ClusterAffinity {
	return &policyv1alpha1.ClusterAffinity{FieldSelector: &policyv1alpha1.FieldSelector{MatchExpressions: reqs}}
}

func TestFieldSelectorOnMembersSpanningZones(t *testing.T) {
	snap := st.Snapshot(t, st.Member("multi", zones("z1", "z2")), st.Member("single", st.Zone("z3")), st.Member("none"))
	tests := []struct {
		name string
		req  policyv1alpha1.FieldSelectorRequirement
		want []string
	}{
		{"In matches any zone", policyv1alpha1.FieldSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}, []string{"multi"}},
		{"NotIn needs every zone outside", policyv1alpha1.FieldSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"z2"}}, []string{"none", "single"}},
		{"Exists", policyv1alpha1.FieldSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists}, []string{"multi", "single"}},
		{"DoesNotExist", policyv1alpha1.FieldSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpDoesNotExist}, []string{"none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term, err := affinity.Compile("", fields(tt.req))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range snap.Len() {
				if ok, _ := term.Match(snap.Member(i)); ok {
					got = append(got, snap.Member(i).Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("matched %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTermsOf(t *testing.T) {
	named := func(names ...string) *policyv1alpha1.Placement {
		p := &policyv1alpha1.Placement{}
		for _, n := range names {
			p.ClusterAffinities = append(p.ClusterAffinities, policyv1alpha1.ClusterAffinityTerm{AffinityName: n})
		}
		return p
	}
	tests := []struct {
		name      string
		placement *policyv1alpha1.Placement
		want      []string
		wantErr   bool
	}{
		{"no placement: one term matching all", nil, []string{""}, false},
		{"single clusterAffinity", &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{}}, []string{""}, false},
		{"ordered terms keep their order", named("primary", "backup"), []string{"primary", "backup"}, false},
		{"duplicate names", named("x", "x"), nil, true},
		{"both forms", func() *policyv1alpha1.Placement {
			p := named("x")
			p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{}
			return p
		}(), nil, true},
		{"unknown field key", &policyv1alpha1.Placement{ClusterAffinity: fields(policyv1alpha1.FieldSelectorRequirement{Key: "rack", Operator: corev1.NodeSelectorOpExists})}, nil, true},
		{"In without values", &policyv1alpha1.Placement{ClusterAffinity: fields(policyv1alpha1.FieldSelectorRequirement{Key: "region", Operator: corev1.NodeSelectorOpIn})}, nil, true},
		{"Exists with values", &policyv1alpha1.Placement{ClusterAffinity: fields(policyv1alpha1.FieldSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists, Values: []string{"z1"}})}, nil, true},
		{"Gt is not a field operator", &policyv1alpha1.Placement{ClusterAffinity: fields(policyv1alpha1.FieldSelectorRequirement{Key: "region", Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}})}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms, err := affinity.TermsOf(tt.placement)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, term := range terms {
				got = append(got, term.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("terms = %v, want %v", got, tt.want)
			}
		})
	}
}
