package quota

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// RetryPriority is the work queue priority above which bindings retried
// because quota freed are queued: ahead of routine events. Each retry
// raises it by one: the priority queue orders items of equal priority by
// when they were first added, and keeps an item it already holds (a binding
// requeued for its periodic retry, at the priority it last ran with) in its
// old place unless the new priority is higher. A higher priority each time
// makes the queue take the waiting bindings in exactly the order given.
const RetryPriority = 10

// RetryEcho is how long after quota frees the waiting bindings of the
// namespace are looked for a second time.
const RetryEcho = time.Second

// NewRetry is a source for the scheduling controller of ResourceBindings:
// whenever the tracker reports that quota freed in a namespace (a binding
// shrank or went, a quota grew or went), it enqueues at once the
// namespace's bindings waiting on quota — Scheduled=False with reason
// QuotaExceeded — oldest first by creation time, and once more RetryEcho
// later. It patches nothing.
func NewRetry(reader client.Reader, t *tracker.Tracker) source.TypedSource[reconcile.Request] {
	s := &namespaceSource{name: "quota-retry", priority: RetryPriority, escalate: true, requests: func(ctx context.Context, ns string) []reconcile.Request {
		return waitingOnQuota(ctx, reader, ns)
	}}
	t.Subscribe(func(c tracker.Change) {
		if c.Freed {
			s.add(c.Namespace)
			// Once more shortly after: a binding refused just before quota
			// freed may not show its QuotaExceeded condition yet.
			time.AfterFunc(RetryEcho, func() { s.add(c.Namespace) })
		}
	})
	return s
}

// NewRenderRetry is the same for the binding controller of
// ResourceBindings: when quota frees in a namespace, it enqueues the
// bindings whose Works were refused for quota — Rendered=False with reason
// QuotaExceeded — oldest first, and once more RetryEcho later.
func NewRenderRetry(reader client.Reader, t *tracker.Tracker) source.TypedSource[reconcile.Request] {
	s := &namespaceSource{name: "quota-render-retry", priority: RetryPriority, escalate: true, requests: func(ctx context.Context, ns string) []reconcile.Request {
		return waitingOn(ctx, reader, ns, workv1alpha1.ConditionRendered)
	}}
	t.Subscribe(func(c tracker.Change) {
		if c.Freed {
			s.add(c.Namespace)
			time.AfterFunc(RetryEcho, func() { s.add(c.Namespace) })
		}
	})
	return s
}

// waitingOnQuota lists the namespace's bindings waiting on quota, oldest first.
func waitingOnQuota(ctx context.Context, reader client.Reader, ns string) []reconcile.Request {
	return waitingOn(ctx, reader, ns, workv1alpha1.ConditionScheduled)
}

// waitingOn lists the namespace's bindings whose condition is
// False/QuotaExceeded, oldest first.
func waitingOn(ctx context.Context, reader client.Reader, ns, condition string) []reconcile.Request {
	list := &workv1alpha1.ResourceBindingList{}
	if err := reader.List(ctx, list, client.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the bindings waiting on quota", "namespace", ns)
		return nil
	}
	return waitingFor(list.Items, condition)
}

// WaitingOnQuota picks the bindings whose Scheduled condition is False with
// reason QuotaExceeded and orders them oldest first (creation time, then
// name), as requests for the scheduling controller.
func WaitingOnQuota(bindings []workv1alpha1.ResourceBinding) []reconcile.Request {
	return waitingFor(bindings, workv1alpha1.ConditionScheduled)
}

func waitingFor(bindings []workv1alpha1.ResourceBinding, condition string) []reconcile.Request {
	var waiting []*workv1alpha1.ResourceBinding
	for i := range bindings {
		b := &bindings[i]
		c := findCondition(b.Status.Conditions, condition)
		if c != nil && c.Status == metav1.ConditionFalse && c.Reason == workv1alpha1.BindingReasonQuotaExceeded && b.DeletionTimestamp.IsZero() {
			waiting = append(waiting, b)
		}
	}
	slices.SortFunc(waiting, func(a, b *workv1alpha1.ResourceBinding) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]reconcile.Request, len(waiting))
	for i, b := range waiting {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}
	}
	return out
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// quotasChanged is a source for the quota status controller: the quotas of
// every namespace whose usage or quotas the tracker reports changed.
func quotasChanged(reader client.Reader, t *tracker.Tracker) source.TypedSource[reconcile.Request] {
	s := &namespaceSource{name: "quota-usage", requests: func(ctx context.Context, ns string) []reconcile.Request {
		return quotasOf(ctx, reader, ns)
	}}
	t.Subscribe(func(c tracker.Change) { s.add(c.Namespace) })
	return s
}

func quotasOf(ctx context.Context, reader client.Reader, ns string) []reconcile.Request {
	list := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := reader.List(ctx, list, client.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list FederatedResourceQuotas", "namespace", ns)
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// namespaceSource turns namespaces reported by the tracker into requests.
// Reports are coalesced (a burst of changes in one namespace enqueues its
// requests once) and handled off the reporting goroutine, which is an
// informer's and must not block.
type namespaceSource struct {
	name     string
	priority int
	// escalate raises priority by one before each batch is enqueued.
	escalate bool
	requests func(ctx context.Context, ns string) []reconcile.Request

	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{}
	once    sync.Once
}

func (s *namespaceSource) init() {
	s.once.Do(func() {
		s.pending = map[string]struct{}{}
		s.wake = make(chan struct{}, 1)
	})
}

func (s *namespaceSource) add(ns string) {
	s.init()
	s.mu.Lock()
	s.pending[ns] = struct{}{}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *namespaceSource) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.pending))
	for ns := range s.pending {
		out = append(out, ns)
	}
	clear(s.pending)
	slices.Sort(out)
	return out
}

// Start implements source.TypedSource.
func (s *namespaceSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.init()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			for _, ns := range s.take() {
				if s.escalate {
					s.priority++
				}
				enqueue(q, s.priority, s.requests(ctx, ns))
			}
		}
	}()
	return nil
}

func (s *namespaceSource) String() string { return s.name }

// enqueue adds requests in order, at priority when the queue has priorities.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], priority int, reqs []reconcile.Request) {
	if len(reqs) == 0 {
		return
	}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && priority != 0 {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &priority}, reqs...)
		return
	}
	for _, r := range reqs {
		q.Add(r)
	}
}
