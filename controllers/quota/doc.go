// Package quota is flotilla-manager's side of FederatedResourceQuota
// (docs/quota.md):
//
//   - Feed keeps the quota tracker (internal/quota/tracker), which the
//     scheduler asks before every placement, up to date from binding and
//     quota events;
//   - NewRetry is a source for the scheduling controller that re-queues the
//     bindings waiting on quota, oldest first, as soon as quota frees;
//   - Reconciler writes each quota's status (overall, overallUsed,
//     aggregatedStatus, the Ready and StaticAssignmentsApplied conditions)
//     and keeps a ResourceQuota in each statically assigned member through
//     the same Work path as templates (controllers/execution applies it and
//     reports its status back);
//   - WebhookScope keeps the quota warning webhooks (webhooks.WorkloadQuota)
//     to the namespaces holding a quota, so that templates elsewhere cost
//     the hub no call to the manager.
package quota

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// SetupWithManager feeds the tracker from the manager's informers and
// registers the quota controller.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, t *tracker.Tracker, options controller.Options) error {
	if err := Feed(ctx, mgr, t); err != nil {
		return fmt.Errorf("feed the quota tracker: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Tracker: t, Recorder: mgr.GetEventRecorder("flotilla-quota")}
	if err := r.SetupWithManager(mgr, options); err != nil {
		return fmt.Errorf("quota controller: %w", err)
	}
	return nil
}
