package applier

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/statusapply"
)

// ConflictRequeue is the retry after a write of a Work refused for its
// optimistic lock: the hub changed the Work meanwhile, and the outcome was
// of the version before.
const ConflictRequeue = 100 * time.Millisecond

// outcomeFields are the Work status fields the side that applies a Work
// owns: all of them.
type outcomeFields struct {
	Conditions       []metav1.Condition            `json:"conditions"`
	ManifestStatuses []workv1alpha1.ManifestStatus `json:"manifestStatuses"`
}

func outcomeOf(w *workv1alpha1.Work) outcomeFields {
	f := outcomeFields{Conditions: []metav1.Condition{}, ManifestStatuses: append([]workv1alpha1.ManifestStatus{}, w.Status.ManifestStatuses...)}
	for _, t := range OwnedConditions {
		if c := conditions.Get(w, t); c != nil {
			f.Conditions = append(f.Conditions, *c)
		}
	}
	return f
}

// WriteOutcome records on the hub what applying work changed since before
// (the Work as read): a finalizer added or removed, with an optimistic lock
// (a finalizer list is written whole); then the status, in one request as
// manager (statusapply), nothing if it did not change. CAPI's patch.Helper
// wrote the conditions and the manifests' statuses in two requests, and the
// binding's aggregate phase saw the Work half written between them. Both
// sides use it: the hub's execution controller for Push members and the
// agent for its Pull member.
//
// The status write is locked on the version the Work was read at. Refused,
// and live (an uncached reader; nil skips this) shows the Work's spec
// unchanged, the refusal was the cache lagging behind the Work's last
// write — most often this writer's own previous status — and the outcome
// stands: it is written again at once on the live version, rather than
// after the cache catches up. A conflict left (apierrors.IsConflict) means
// the spec changed: retry after ConflictRequeue.
func WriteOutcome(ctx context.Context, c client.Client, live client.Reader, before, work *workv1alpha1.Work, manager string) error {
	// Taken before the finalizer's patch, which answers with the stored
	// status.
	now := outcomeOf(work)
	if !slices.Equal(before.Finalizers, work.Finalizers) {
		if err := c.Patch(ctx, work, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if equality.Semantic.DeepEqual(now, outcomeOf(before)) {
		return nil
	}
	write := func(resourceVersion string) error {
		return statusapply.Apply(ctx, c, workv1alpha1.GroupVersion.WithKind("Work"), client.ObjectKeyFromObject(work), resourceVersion, manager, now)
	}
	err := write(work.ResourceVersion)
	if apierrors.IsConflict(err) && live != nil {
		stored := &workv1alpha1.Work{}
		if getErr := live.Get(ctx, client.ObjectKeyFromObject(work), stored); getErr != nil {
			return client.IgnoreNotFound(getErr)
		}
		if stored.Generation == work.Generation && stored.DeletionTimestamp.IsZero() == work.DeletionTimestamp.IsZero() {
			err = write(stored.ResourceVersion)
		}
	}
	// A Work whose last finalizer went is gone: nothing to report on it.
	return client.IgnoreNotFound(err)
}
