package enrolment

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/memberstatus"
)

// reconcileMemberStatus copies what the scoped identity observed into the
// member's status: Kubernetes version, API enablements, the estimator's
// capacity model and summaries, and the heartbeat. Pull-mode members' agents
// own these fields (addon/agent): the hub leaves them alone.
func (r *Reconciler) reconcileMemberStatus(ctx context.Context, s *scope) (bool, error) {
	obs := s.observed
	if obs == nil || syncMode(s.member) == clusterv1alpha1.Pull {
		return true, nil
	}
	st := &s.member.Status
	st.KubernetesVersion = obs.version
	if !obs.partial {
		// A partial discovery would drop the groups that failed; keep the last full one.
		st.APIEnablements = memberstatus.APIEnablements(obs.resources)
	}
	if obs.capacity != nil {
		if err := memberstatus.SetCapacity(st, obs.capacity.Data); err != nil {
			// A malformed model is the estimator's bug, not a reason to stop enrolment.
			ctrl.LoggerFrom(ctx).Error(err, "Ignoring the member's capacity model", "member", s.memberName)
		}
	}
	now := metav1.Now()
	st.LastHeartbeatTime = &now
	return true, nil
}
