package enrolment

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// reconcileMemberStatus copies what the scoped identity observed into the
// member's status: Kubernetes version, API enablements, the estimator's
// capacity model and summaries, and the heartbeat. Pull-mode members report
// these through their agent.
func (r *Reconciler) reconcileMemberStatus(ctx context.Context, s *scope) (bool, error) {
	obs := s.observed
	if obs == nil {
		return true, nil
	}
	st := &s.member.Status
	st.KubernetesVersion = obs.version
	if !obs.partial {
		// A partial discovery would drop the groups that failed; keep the last full one.
		st.APIEnablements = apiEnablements(obs.resources)
	}
	if obs.capacity != nil {
		if err := copyCapacity(st, obs.capacity.Data); err != nil {
			// A malformed model is the estimator's bug, not a reason to stop enrolment.
			ctrl.LoggerFrom(ctx).Error(err, "Ignoring the member's capacity model", "member", s.memberName)
		}
	}
	now := metav1.Now()
	st.LastHeartbeatTime = &now
	return true, nil
}

// copyCapacity decodes the estimator's ConfigMap into the status; all or nothing.
func copyCapacity(st *clusterv1alpha1.MemberClusterStatus, data map[string]string) error {
	model := &clusterv1alpha1.CapacityModel{}
	nodes := &clusterv1alpha1.NodeSummary{}
	resources := &clusterv1alpha1.ResourceSummary{}
	for key, into := range map[string]any{
		clusterv1alpha1.CapacityModelKey:   model,
		clusterv1alpha1.NodeSummaryKey:     nodes,
		clusterv1alpha1.ResourceSummaryKey: resources,
	} {
		raw, ok := data[key]
		if !ok {
			return fmt.Errorf("capacity ConfigMap has no %q key", key)
		}
		if err := json.Unmarshal([]byte(raw), into); err != nil {
			return fmt.Errorf("decode %s of the capacity ConfigMap: %w", key, err)
		}
	}
	st.CapacityModel, st.NodeSummary, st.ResourceSummary = model, nodes, resources
	return nil
}
