package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestValidateSpec(t *testing.T) {
	cases := []struct {
		name string
		spec policyv1alpha1.FederatedResourceQuotaSpec
		want []string // "field: detail" of each error, in order
	}{
		{
			name: "assignments within overall are valid",
			spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall: list("cpu", "10", "memory", "10Gi"),
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{
					{ClusterName: "m1", Hard: list("cpu", "6")},
					{ClusterName: "m2", Hard: list("cpu", "4", "memory", "10Gi")},
				},
			},
		},
		{
			name: "milli-CPU assignments summing past overall are rejected",
			spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall: list("cpu", "10"),
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{
					{ClusterName: "m1", Hard: list("cpu", "6")},
					{ClusterName: "m2", Hard: list("cpu", "4001m")},
				},
			},
			want: []string{"spec.staticAssignments: static assignments of cpu sum to 10001m, more than overall 10"},
		},
		{
			name: "an assignment naming a resource overall does not is rejected",
			spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall:           list("cpu", "10"),
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "m1", Hard: list("pods", "5")}},
			},
			want: []string{"spec.staticAssignments[0].hard[pods]: pods is not in spec.overall; a static assignment may only share out what overall grants"},
		},
		{
			name: "negative quantities are rejected where they are",
			spec: policyv1alpha1.FederatedResourceQuotaSpec{
				Overall:           list("cpu", "-1", "memory", "1Gi"),
				StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "m1", Hard: list("memory", "-1Mi")}},
			},
			want: []string{
				"spec.overall[cpu]: must not be negative",
				"spec.staticAssignments[0].hard[memory]: must not be negative",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateSpec(&tc.spec, field.NewPath("spec"))
			if len(errs) != len(tc.want) {
				t.Fatalf("want %d errors %q, got %d: %v", len(tc.want), tc.want, len(errs), errs)
			}
			for i, e := range errs {
				if got := e.Field + ": " + e.Detail; got != tc.want[i] {
					t.Errorf("error %d: want %q, got %q", i, tc.want[i], got)
				}
			}
		})
	}
}
