// Package applier carries out Works on a member cluster. It is the one
// implementation of Work semantics: the hub's execution controller uses it
// for Push-mode members (controllers/execution) and flotilla-agent for its
// own Pull-mode member (addon/agent), so that a Work means the same thing
// whichever side applies it.
//
// Applying: every manifest of a Work is applied to the member in order with
// server-side apply under the field manager "flotilla", and its result —
// applied or why not, health, the object's status — is written to the
// Work's status (manifestStatuses and the Applied, Available and Dispatching
// conditions). A suspended Work (spec.suspendDispatching) is not touched.
//
// Conflicts: an object that exists in the member and is not managed by
// Flotilla (neither the flotilla.io/managed-by label nor the "flotilla" field
// manager) is left alone under conflictResolution Abort, and reported; under
// Overwrite it is taken over (apply with force). Objects Flotilla applied
// carry the label. The Work's conflictResolution is decided by the binding
// controller (tenancy.ConflictResolution): when a binding's Overwrite was not
// honoured, the Work says why (work.flotilla.io/overwrite-refused) and so
// does the conflict's message.
//
// Removal: objects dropped from a Work's manifests, and all of a Work's
// objects when the Work is deleted (the execution finalizer holds it), are
// deleted from the member — unless spec.preserveResourcesOnDeletion — but
// never an object Flotilla does not manage, nor one that another Work of the
// same member still carries (two workloads may share a dependency).
//
// Namespaces a Work's objects live in are created in the member when
// missing (labelled as Flotilla's), and never deleted by Flotilla.
package applier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/workmemo"
)

// MemberClients hands out a client of a member with the member's REST
// mapper (which must find kinds the member serves after it started, e.g.
// controller-runtime's dynamic mapper). Errors mean the member cannot be
// reached now.
type MemberClients interface {
	ClientFor(ctx context.Context, member string) (client.Client, meta.RESTMapper, error)
}

// Access extends the member identity's rights to what a Work's objects need
// before the Work is applied (the hub's Push identity is granted namespaces
// and kinds as Works need them, by enrolment; see controllers/enrolment).
// An error leaves the Work unapplied, with reason AccessRefusedReason when
// it wraps a refusal, and is retried.
type Access interface {
	Grant(ctx context.Context, member string, w *workv1alpha1.Work, need Need) error
}

// Need is what applying a Work requires of the member identity.
type Need struct {
	// Namespaces the Work's namespaced objects live in, sorted.
	Namespaces []string
	// Resources the Work's objects are, each once.
	Resources []Resource
}

// Resource is a kind as the member serves it.
type Resource struct {
	schema.GroupResource
	Namespaced bool
}

// AccessRefusedReason is the Applied condition's reason of a Work the
// member identity may not be granted what it needs.
const AccessRefusedReason = "AccessRefused"

// ErrAccessRefused is wrapped by an Access error that is a refusal by rule,
// not a failure to grant.
var ErrAccessRefused = errors.New("refused")

// Options say how soon a Work is looked at again.
type Options struct {
	// ResyncUnhealthy is how soon a Work with an object not applied or not
	// healthy is looked at again. Default 10s.
	ResyncUnhealthy time.Duration
	// ResyncHealthy is how soon a Work whose objects are all healthy is
	// applied again, to repair drift and refresh status. Default 60s.
	ResyncHealthy time.Duration
	// ProgressInterval is the least time between two writes of a Work's
	// status (and its binding's) that only move progress while nothing
	// changes state (pacing.Reports); 0 writes every change at once. Not
	// defaulted: the binaries' flags default it to
	// pacing.DefaultProgressInterval.
	ProgressInterval time.Duration
}

// Default fills the zero values.
func (o *Options) Default() {
	if o.ResyncUnhealthy <= 0 {
		o.ResyncUnhealthy = 10 * time.Second
	}
	if o.ResyncHealthy <= 0 {
		o.ResyncHealthy = 60 * time.Second
	}
}

// Event reasons on Works.
const (
	// ApplyFailedReason: a manifest could not be applied (the Applied
	// condition's reason says why: APINotEnabled, Conflict, ApplyFailed…).
	ApplyFailedReason = "ApplyFailed"
	// RemoveFailedReason: an object could not be removed from the member.
	RemoveFailedReason = "RemoveFailed"
)

// ConflictMessage is the message of a manifest not applied because the
// object exists in the member and is not Flotilla's.
const ConflictMessage = "exists in the member and is not managed by Flotilla; set conflictResolution: Overwrite to take it over"

// conflictMessage is ConflictMessage, or, when the Work's binding asked for
// Overwrite and it was not honoured (workv1alpha1.OverwriteRefusedAnnotation),
// why not: setting Overwrite in the policy would not help.
func conflictMessage(w *workv1alpha1.Work) string {
	if refused := w.Annotations[workv1alpha1.OverwriteRefusedAnnotation]; refused != "" {
		return "exists in the member and is not managed by Flotilla; " + refused
	}
	return ConflictMessage
}

// OwnedConditions are the Work conditions an applier writes; callers patch
// the Work with them as owned conditions.
var OwnedConditions = []string{workv1alpha1.WorkApplied, workv1alpha1.WorkAvailable, workv1alpha1.WorkDispatching}

// Applier applies Works to members and writes the outcome into the Work
// it is given; the caller patches the Work.
type Applier struct {
	// Works reads the hub's Works: a removed object that another Work of the
	// same member still carries stays.
	Works client.Reader
	// Members reaches the members.
	Members MemberClients
	// Recorder records ApplyFailed and RemoveFailed events on Works.
	Recorder events.EventRecorder
	// Access, when set, is asked before each apply for what the Work needs.
	Access Access
	// Interpreter judges health, reflects status and retains member values;
	// nil knows the built-in kinds only.
	Interpreter *interpreter.Interpreter
	Options

	// carried remembers the objects each Work carries, per execution
	// namespace: a removal does not decode every Work of the member again.
	carried workmemo.Memo[[]objectID]
}

// Outcome is how a live Work stands in its member after Apply or Refresh.
type Outcome struct {
	// InSync: the member holds what the Work says — every manifest applied
	// and nothing dropped left behind — or the Work is suspended. Nothing
	// needs writing until the Work changes or drift is to be repaired.
	InSync bool
	// Healthy: in sync and every object healthy.
	Healthy bool
	// RequeueAfter is when to look at the Work again; zero for never.
	RequeueAfter time.Duration
}

// target is one member as an apply sees it.
type target struct {
	name   string
	client client.Client
	mapper meta.RESTMapper
}

// Apply brings the member in line with a live Work: each manifest is
// applied, objects the Work dropped are removed, and the Work's status is
// rewritten. An error is returned only when removing a dropped object failed.
func (a *Applier) Apply(ctx context.Context, member string, w *workv1alpha1.Work) (Outcome, error) {
	if suspended(w) {
		return Outcome{InSync: true}, nil
	}
	t, err := a.connect(ctx, member, w)
	if err != nil {
		return Outcome{RequeueAfter: a.ResyncUnhealthy}, nil
	}
	if a.Access != nil {
		need, _ := needOf(t, w)
		if err := a.Access.Grant(ctx, member, w, need); err != nil {
			reason := workv1alpha1.WorkReasonApplyFailed
			if errors.Is(err, ErrAccessRefused) {
				reason = AccessRefusedReason
			}
			if !conditions.IsFalse(w, workv1alpha1.WorkApplied) || conditions.GetReason(w, workv1alpha1.WorkApplied) != reason {
				a.Recorder.Eventf(w, nil, corev1.EventTypeWarning, ApplyFailedReason, "Apply", "member %s identity: %v", member, err)
			}
			markApplied(w, metav1.ConditionFalse, reason, "the identity in member %s cannot be given what the Work needs: %v", member, err)
			return Outcome{RequeueAfter: a.ResyncUnhealthy}, nil
		}
	}
	results := a.applyManifests(ctx, t, w)
	if err := a.removeDropped(ctx, t, w, results); err != nil {
		return Outcome{}, err
	}
	return a.outcome(summarise(w, results)), nil
}

// Refresh rewrites a live Work's status from its objects as the member holds
// them, without writing to the member: for an executor that knows the Work
// is unchanged since it last applied it in full. InSync is false when an
// object is missing or no longer Flotilla's; the caller then applies.
func (a *Applier) Refresh(ctx context.Context, member string, w *workv1alpha1.Work) (Outcome, error) {
	if suspended(w) {
		return Outcome{InSync: true}, nil
	}
	t, err := a.connect(ctx, member, w)
	if err != nil {
		return Outcome{RequeueAfter: a.ResyncUnhealthy}, nil
	}
	results := make([]result, 0, len(w.Spec.Workload.Manifests))
	for i, m := range w.Spec.Workload.Manifests {
		results = append(results, a.observeManifest(ctx, t, w, i, m.Raw))
	}
	return a.outcome(summarise(w, results)), nil
}

// Withdraw removes a deleted Work's objects from the member — unless
// spec.preserveResourcesOnDeletion — and then releases the execution
// finalizer. On error the finalizer stays, and the caller retries.
func (a *Applier) Withdraw(ctx context.Context, member string, w *workv1alpha1.Work) error {
	if !isTrue(w.Spec.PreserveResourcesOnDeletion) {
		t, err := a.connect(ctx, member, w)
		if err != nil {
			return err
		}
		ids := appliedIdentifiers(w.Status.ManifestStatuses)
		ids = append(ids, manifestIdentifiers(w)...)
		if err := a.remove(ctx, t, w, dedupe(ids)); err != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(w, workv1alpha1.ExecutionFinalizer)
	return nil
}

// Abandon releases a deleted Work's execution finalizer without touching
// the member, for a member that cannot be reached: it returns the objects
// that may remain there ("Kind namespace/name", or "Kind name" when
// cluster-scoped), for the caller to report. Objects the Work preserves on
// deletion are not listed.
func Abandon(w *workv1alpha1.Work) []string {
	controllerutil.RemoveFinalizer(w, workv1alpha1.ExecutionFinalizer)
	if isTrue(w.Spec.PreserveResourcesOnDeletion) {
		return nil
	}
	ids := dedupe(append(appliedIdentifiers(w.Status.ManifestStatuses), manifestIdentifiers(w)...))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		name := id.Name
		if id.Namespace != "" {
			name = id.Namespace + "/" + id.Name
		}
		out = append(out, id.Kind+" "+name)
	}
	return out
}

// connect sets Dispatching on a live Work and finds the member's client;
// without one the Work is marked MemberUnavailable.
func (a *Applier) connect(ctx context.Context, member string, w *workv1alpha1.Work) (target, error) {
	if w.DeletionTimestamp.IsZero() {
		conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionTrue,
			Reason: workv1alpha1.WorkReasonDispatching, Message: "the Work is applied to member " + member})
	}
	c, mapper, err := a.Members.ClientFor(ctx, member)
	if err != nil {
		err = fmt.Errorf("no client for member %s: %w", member, err)
		markApplied(w, metav1.ConditionFalse, workv1alpha1.WorkReasonMemberUnavailable, "%v", err)
		return target{}, err
	}
	return target{name: member, client: c, mapper: mapper}, nil
}

func (a *Applier) outcome(healthy, inSync bool) Outcome {
	out := Outcome{InSync: inSync, Healthy: healthy, RequeueAfter: a.ResyncUnhealthy}
	if healthy {
		out.RequeueAfter = a.ResyncHealthy
	}
	return out
}

// suspended marks a Work whose dispatching is suspended and reports so.
func suspended(w *workv1alpha1.Work) bool {
	if !isTrue(w.Spec.SuspendDispatching) {
		return false
	}
	conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkDispatching, Status: metav1.ConditionFalse,
		Reason: workv1alpha1.WorkReasonSuspended, Message: "spec.suspendDispatching is true: the Work is not applied to the member"})
	return true
}

func isTrue(b *bool) bool { return b != nil && *b }

// needOf is what a Work's objects require in the member: their namespaces
// and kinds, and whether every manifest was decoded and mapped. Manifests
// the member cannot map are left to the apply, which reports them.
func needOf(t target, w *workv1alpha1.Work) (need Need, complete bool) {
	complete = true
	for i, m := range w.Spec.Workload.Manifests {
		mf, failed := locate(t, i, m.Raw)
		if failed != nil {
			complete = false
			continue
		}
		r := Resource{GroupResource: mf.mapping.Resource.GroupResource(), Namespaced: mf.mapping.Scope.Name() == meta.RESTScopeNameNamespace}
		if r.Namespaced && !slices.Contains(need.Namespaces, mf.obj.GetNamespace()) {
			need.Namespaces = append(need.Namespaces, mf.obj.GetNamespace())
		}
		if !slices.Contains(need.Resources, r) {
			need.Resources = append(need.Resources, r)
		}
	}
	slices.Sort(need.Namespaces)
	return need, complete
}
