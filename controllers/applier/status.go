package applier

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func markApplied(w *workv1alpha1.Work, status metav1.ConditionStatus, reason, format string, args ...any) {
	conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: status, Reason: reason,
		Message: fmt.Sprintf(format, args...), ObservedGeneration: w.Generation})
}

// summarise writes the manifest statuses and the Applied and Available
// conditions, and reports whether every manifest is applied and whether,
// moreover, every object is healthy. Applied=False takes the reason of the
// first manifest not applied.
func summarise(w *workv1alpha1.Work, results []result) (healthy, applied bool) {
	var notApplied, notHealthy []string
	reason := ""
	w.Status.ManifestStatuses = make([]workv1alpha1.ManifestStatus, 0, len(results))
	for _, res := range results {
		st := res.status
		w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, st)
		name := describe(st.Identifier)
		switch {
		case !st.Applied:
			if reason == "" {
				reason = res.reason
			}
			notApplied = append(notApplied, name+": "+st.Message)
		case st.Health != workv1alpha1.ResourceHealthy:
			notHealthy = append(notHealthy, name+": "+st.Message)
		}
	}
	n := len(results)
	if len(notApplied) > 0 {
		markApplied(w, metav1.ConditionFalse, reason, "%d of %d manifests not applied: %s", len(notApplied), n, strings.Join(notApplied, "; "))
	} else {
		markApplied(w, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied, "applied %s", plural(n, "manifest"))
	}
	available := metav1.Condition{Type: workv1alpha1.WorkAvailable, ObservedGeneration: w.Generation}
	switch {
	case len(notApplied) > 0:
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, workv1alpha1.WorkReasonNotAvailable, "not every manifest is applied"
	case len(notHealthy) > 0:
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, workv1alpha1.WorkReasonNotAvailable, strings.Join(notHealthy, "; ")
	default:
		available.Status, available.Reason, available.Message = metav1.ConditionTrue, workv1alpha1.WorkReasonAvailable, "every object is healthy"
	}
	conditions.Set(w, available)
	applied = len(notApplied) == 0
	return applied && len(notHealthy) == 0, applied
}

// describe is e.g. "apps/v1 Deployment fleet/web".
func describe(id workv1alpha1.ResourceIdentifier) string {
	gv := id.Version
	if id.Group != "" {
		gv = id.Group + "/" + id.Version
	}
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + id.Name
	}
	return gv + " " + id.Kind + " " + name
}

// plural is "1 manifest" or "n manifests".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
