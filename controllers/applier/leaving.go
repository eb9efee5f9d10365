package applier

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// KeepsWhatRuns says whether a member keeps the objects of its deleted Works
// instead of having them withdrawn: a Cluster that opted out of the fleet
// (Terminating, reason Unenrolling) stays up with what runs in it, and
// removing an opt-in label must not delete running workloads. While it
// drains, its bindings are placed elsewhere; the Works it loses are released
// without touching it, and what stays is reported (LeftInMember).
func KeepsWhatRuns(m *clusterv1alpha1.MemberCluster) bool {
	c := conditions.Get(m, clusterv1alpha1.ConditionTerminating)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == clusterv1alpha1.UnenrollingReason
}
