// Package quota holds the arithmetic of FederatedResourceQuota: validating a
// quota's spec, what a binding uses of each quota key (Usage), and whether a
// request fits what a quota has left (Check). It knows nothing of
// controllers; the stateful accounting the scheduler asks is in
// internal/quota/tracker.
package quota

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// ValidateSpec returns every problem of a FederatedResourceQuota spec that the
// schema cannot check: negative quantities, static assignments naming a
// resource overall does not, and assignments summing past overall.
func ValidateSpec(spec *policyv1alpha1.FederatedResourceQuotaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNonNegative(spec.Overall, path.Child("overall"))...)

	sums := corev1.ResourceList{}
	for i, a := range spec.StaticAssignments {
		hardPath := path.Child("staticAssignments").Index(i).Child("hard")
		errs = append(errs, validateNonNegative(a.Hard, hardPath)...)
		for _, name := range sortedNames(a.Hard) {
			if _, ok := spec.Overall[name]; !ok {
				q := a.Hard[name]
				errs = append(errs, field.Invalid(hardPath.Key(string(name)), q.String(),
					fmt.Sprintf("%s is not in spec.overall; a static assignment may only share out what overall grants", name)))
				continue
			}
			sum := sums[name]
			sum.Add(a.Hard[name])
			sums[name] = sum
		}
	}
	for _, name := range sortedNames(sums) {
		overall, sum := spec.Overall[name], sums[name]
		if sum.Cmp(overall) > 0 {
			errs = append(errs, field.Invalid(path.Child("staticAssignments"), describeAssignments(spec, name),
				fmt.Sprintf("static assignments of %s sum to %s, more than overall %s", name, sum.String(), overall.String())))
		}
	}
	return errs
}

func validateNonNegative(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(list) {
		q := list[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(path.Key(string(name)), q.String(), "must not be negative"))
		}
	}
	return errs
}

func describeAssignments(spec *policyv1alpha1.FederatedResourceQuotaSpec, name corev1.ResourceName) string {
	var parts []string
	for _, a := range spec.StaticAssignments {
		if q, ok := a.Hard[name]; ok {
			parts = append(parts, a.ClusterName+"="+q.String())
		}
	}
	return strings.Join(parts, ", ")
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
