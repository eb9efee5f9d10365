package policydefaults

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func TestPropagation(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{
			name: "spread constraint naming neither field nor label spreads by cluster, at least one group",
			in:   `placement: {spreadConstraints: [{maxGroups: 2}]}`,
			want: `placement: {spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 2}]}`,
		},
		{
			name: "a label constraint keeps its label and gets minGroups 1",
			in:   `placement: {spreadConstraints: [{spreadByLabel: tier}]}`,
			want: `placement: {spreadConstraints: [{spreadByLabel: tier, minGroups: 1}]}`,
		},
		{
			name: "a constraint spelled out is left alone",
			in:   `placement: {spreadConstraints: [{spreadByField: region, minGroups: 2, maxGroups: 3}, {spreadByField: cluster, minGroups: 4}]}`,
			want: `placement: {spreadConstraints: [{spreadByField: region, minGroups: 2, maxGroups: 3}, {spreadByField: cluster, minGroups: 4}]}`,
		},
		{
			name: "Divided with a weight preference and no division preference is Weighted",
			in:   `placement: {replicaScheduling: {replicaSchedulingType: Divided, weightPreference: {dynamicWeight: AvailableReplicas}}}`,
			want: `placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, weightPreference: {dynamicWeight: AvailableReplicas}}}`,
		},
		{
			name: "an unset scheduling type is Divided (the schema's default), so Weighted too",
			in:   `placement: {replicaScheduling: {}}`,
			want: `placement: {replicaScheduling: {replicaDivisionPreference: Weighted}}`,
		},
		{
			name: "Aggregated stays Aggregated",
			in:   `placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}}`,
			want: `placement: {replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}}`,
		},
		{
			name: "Duplicated gets no division preference",
			in:   `placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}`,
			want: `placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}`,
		},
		{
			name: "no replicaScheduling stays none",
			in:   `placement: {clusterAffinity: {clusterNames: [m1]}}`,
			want: `placement: {clusterAffinity: {clusterNames: [m1]}}`,
		},
		{
			name: "application failover purging Gracefully without a grace period keeps the copy 600 s",
			in:   `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Gracefully}}`,
			want: `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Gracefully, gracePeriodSeconds: 600}}`,
		},
		{
			name: "an unset purge mode is Gracefully (the schema's default), so 600 s too",
			in:   `failover: {application: {decisionConditions: {tolerationSeconds: 30}}}`,
			want: `failover: {application: {decisionConditions: {tolerationSeconds: 30}, gracePeriodSeconds: 600}}`,
		},
		{
			name: "a grace period given is kept",
			in:   `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Gracefully, gracePeriodSeconds: 5}}`,
			want: `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Gracefully, gracePeriodSeconds: 5}}`,
		},
		{
			name: "Directly and Never need no grace period",
			in:   `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Directly}}`,
			want: `failover: {application: {decisionConditions: {tolerationSeconds: 30}, purgeMode: Directly}}`,
		},
		{
			name: "cluster failover is not defaulted here",
			in:   `failover: {cluster: {purgeMode: Gracefully}}`,
			want: `failover: {cluster: {purgeMode: Gracefully}}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got, want policyv1alpha1.PropagationSpec
			if err := yaml.UnmarshalStrict([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			Propagation(&got)
			if !equality.Semantic.DeepEqual(got, want) {
				g, _ := yaml.Marshal(got)
				w, _ := yaml.Marshal(want)
				t.Fatalf("defaulted to\n%s\nwant\n%s", g, w)
			}
			// Defaulting twice changes nothing more.
			again := *got.DeepCopy()
			Propagation(&again)
			if !equality.Semantic.DeepEqual(got, again) {
				t.Fatal("defaulting is not idempotent")
			}
		})
	}
}
