package health

import (
	"fmt"
	"math"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// maxNamed bounds how many unhealthy Machines a message names.
const maxNamed = 5

// Workers counts a Cluster's worker Machines by health. Control-plane
// Machines and Machines being deleted (replaced in a rollout, scaled down)
// are not counted.
type Workers struct {
	Total, Healthy, Unhealthy int
	// UnhealthyNames are the unhealthy Machines, sorted.
	UnhealthyNames []string
}

// CountWorkers sorts machines into healthy (NodeHealthy True, neither Ready
// nor HealthCheckSucceeded False), unhealthy (any of the three False) and,
// by difference, unknown (e.g. NodeHealthy Unknown while the Cluster is
// unreachable).
func CountWorkers(machines []Machine) Workers {
	var w Workers
	for _, m := range machines {
		if m.ControlPlane || m.Deleting {
			continue
		}
		w.Total++
		switch {
		case m.NodeHealthy == metav1.ConditionFalse || m.Ready == metav1.ConditionFalse || m.HealthCheckSucceeded == metav1.ConditionFalse:
			w.Unhealthy++
			w.UnhealthyNames = append(w.UnhealthyNames, m.Name)
		case m.NodeHealthy == metav1.ConditionTrue:
			w.Healthy++
		}
	}
	slices.Sort(w.UnhealthyNames)
	return w
}

// workersAvailable is True when at least threshold of the worker Machines
// are healthy, False when fewer are even counting those of unknown health as
// healthy, and Unknown in between.
func workersAvailable(machines []Machine, threshold float64) metav1.Condition {
	if threshold <= 0 {
		threshold = DefaultWorkersThreshold
	}
	w := CountWorkers(machines)
	out := metav1.Condition{Type: clusterv1alpha1.ConditionWorkersAvailable}
	if w.Total == 0 {
		out.Status, out.Reason, out.Message = metav1.ConditionTrue, clusterv1alpha1.NoWorkersReason, "the Cluster has no worker Machines"
		return out
	}
	need := int(math.Ceil(threshold*float64(w.Total) - 1e-9))
	unknown := w.Total - w.Healthy - w.Unhealthy
	out.Message = fmt.Sprintf("%d of %d worker Machines healthy, %d needed (%s)", w.Healthy, w.Total, need, percent(threshold))
	switch {
	case w.Healthy >= need:
		out.Status, out.Reason = metav1.ConditionTrue, clusterv1alpha1.WorkersAvailableReason
	case w.Healthy+unknown >= need:
		out.Status, out.Reason = metav1.ConditionUnknown, clusterv1alpha1.WorkersUnknownReason
		out.Message += fmt.Sprintf("; %d report no health", unknown)
	default:
		out.Status, out.Reason = metav1.ConditionFalse, clusterv1alpha1.WorkersDegradedReason
	}
	if w.Unhealthy > 0 {
		names := w.UnhealthyNames
		more := ""
		if len(names) > maxNamed {
			more = fmt.Sprintf(" and %d more", len(names)-maxNamed)
			names = names[:maxNamed]
		}
		out.Message += "; unhealthy: " + strings.Join(names, ", ") + more
	}
	return out
}

func percent(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*1000)/10) }
