// Package propagation wires the propagation pipeline into a manager:
// federated namespaces kept inert (federatednamespace), the interpreter's
// customizations loaded (customization), templates matched to
// policies and bound (detector), bindings rendered into Works (binding),
// Works applied to Push-mode members (execution) and their status
// aggregated into bindings (status). docs/propagation.md describes the
// pipeline as a whole.
package propagation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/customization"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/controllers/federatednamespace"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	quotacontroller "github.com/flotilla-io/flotilla/controllers/quota"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
	"github.com/flotilla-io/flotilla/internal/removal"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
)

// Options configure the pipeline.
type Options struct {
	// MemberClients reach Push-mode members as the hub's scoped identity.
	MemberClients execution.MemberClients
	// MemberAccess grants the hub's identity in a member what a Work needs
	// (namespaces, cluster-scoped kinds) before it is applied; nil when the
	// member clients need no grants.
	MemberAccess execution.Access
	// Execution tunes how often Works are re-applied.
	Execution execution.Options
	// MemberWatches, when set, is how the objects Works applied are watched
	// in their members, so that a Work's status follows its member at once
	// rather than at the next re-apply (controllers/memberwatch).
	MemberWatches memberwatch.Connections
	// MemberHealth is what the hub's requests showed of each member; the
	// MemberClients' connections must report to it. nil: not tracked.
	MemberHealth *memberclient.Health
	// MaxInFlightPerMember and MemberTimeout bound what one member may take
	// of the execution workers; 0 means execution's defaults.
	MaxInFlightPerMember int
	MemberTimeout        time.Duration
	// WithdrawTimeout bounds how long a deleted Work waits for its
	// unreachable member; 0 means execution's default.
	WithdrawTimeout time.Duration
	// Concurrency is how many templates (detector) and federated
	// namespaces each controller reconciles at once; 0 means
	// DefaultConcurrency. Bindings have BindingConcurrency.
	Concurrency int
	// BindingConcurrency is how many bindings each binding phase's
	// controller (render, aggregate) handles at once; 0 means
	// DefaultBindingConcurrency.
	BindingConcurrency int
	// WorkConcurrency is how many Works the execution controller handles at
	// once, over all Push-mode members (MaxInFlightPerMember bounds each);
	// 0 means DefaultWorkConcurrency.
	WorkConcurrency int
	// Quota, when set, is the quota tracker the binding controller checks
	// and charges each ResourceBinding's rendered Works with (the one the
	// scheduler asks), retrying refused bindings when quota frees.
	Quota *tracker.Tracker
	// Removals paces the removal of Works' objects from each member; nil
	// removes at once.
	Removals *removal.Limiter
	// Reports paces the status writes of Works and bindings that only
	// move progress; nil makes one of Execution.ProgressInterval. (Keys
	// do not collide: Works live in execution namespaces, bindings never.)
	Reports *pacing.Reports
	// Holds, when set, is the scheduler's held-capacity ledger, told by the
	// aggregate phase when members apply a binding's Works.
	Holds *assumed.Ledger
	// TemplateBatching, when set, holds new templates while a burst of
	// them arrives (detector.Batching).
	TemplateBatching *detector.Batching
}

// DefaultConcurrency: applying to members waits on their API servers, so
// one worker per controller would serialise the fleet.
const DefaultConcurrency = 4

// DefaultBindingConcurrency: the render and aggregate phases wait on the
// hub's apiserver for each binding's Works and status.
const DefaultBindingConcurrency = DefaultConcurrency

// DefaultWorkConcurrency: a Work's handling is mostly waiting on its
// member's apiserver and the hub's, and each change of an object in a
// member (watched) is a handling; with 4 workers for all members, a burst of
// 100 Deployments over 3 members waited 2.6 s (p50) between a member having
// its part Ready and the Work saying so (BenchmarkPropagationLatency).
const DefaultWorkConcurrency = 16

// SetupWithManager registers every controller of the pipeline.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.MemberClients == nil {
		return errors.New("propagation: MemberClients must be set")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.WorkConcurrency <= 0 {
		opts.WorkConcurrency = DefaultWorkConcurrency
	}
	if opts.BindingConcurrency <= 0 {
		opts.BindingConcurrency = DefaultBindingConcurrency
	}
	bindingOptions := controller.Options{MaxConcurrentReconciles: opts.BindingConcurrency}
	if opts.Reports == nil {
		opts.Reports = &pacing.Reports{Interval: opts.Execution.ProgressInterval}
	}
	options := controller.Options{MaxConcurrentReconciles: opts.Concurrency}
	c := mgr.GetClient()
	if err := (&federatednamespace.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("flotilla-federatednamespace")}).
		SetupWithManager(mgr, options); err != nil {
		return fmt.Errorf("federated namespace controller: %w", err)
	}
	// One interpreter for the pipeline, its customizations loaded from the
	// hub; a changed customization has the templates of its kind read again.
	interp := interpreter.New(luavm.New(luavm.Limits{}))
	newKindChannel := func() chan event.TypedGenericEvent[schema.GroupVersionKind] {
		return make(chan event.TypedGenericEvent[schema.GroupVersionKind], 64)
	}
	kindChanged := newKindChannel()
	bindingsChanged := map[string]chan event.TypedGenericEvent[schema.GroupVersionKind]{
		binding.KindResourceBinding: newKindChannel(), binding.KindClusterResourceBinding: newKindChannel(),
	}
	if err := (&customization.Reconciler{
		Client: c, Interpreter: interp,
		// Templates are read again (replicas), bindings rendered again
		// (revision, dependencies).
		Changed: func(gvk schema.GroupVersionKind) {
			e := event.TypedGenericEvent[schema.GroupVersionKind]{Object: gvk}
			kindChanged <- e
			for _, ch := range bindingsChanged {
				ch <- e
			}
		},
	}).SetupWithManager(mgr, "customization"); err != nil {
		return fmt.Errorf("customization controller: %w", err)
	}
	templates := binding.NewRecentTemplates()
	d := &detector.Detector{
		Client: c, APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), RESTMapper: mgr.GetRESTMapper(),
		Recorder: mgr.GetEventRecorder("flotilla-detector"), Interpreter: interp, KindChanged: kindChanged,
		Templates: templates, Batching: opts.TemplateBatching,
	}
	if err := d.SetupWithManager(ctx, mgr, controller.TypedOptions[detector.TemplateKey]{MaxConcurrentReconciles: opts.Concurrency}); err != nil {
		return fmt.Errorf("detector: %w", err)
	}
	br := &binding.Renderer{Client: c, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-binding"), Removals: opts.Removals, Templates: templates,
		Interpreter: interp, KindChanged: map[string]<-chan event.TypedGenericEvent[schema.GroupVersionKind]{}}
	for kind, ch := range bindingsChanged {
		br.KindChanged[kind] = ch
	}
	if opts.Quota != nil {
		br.Quota = opts.Quota
		br.QuotaWakeups = []source.TypedSource[reconcile.Request]{quotacontroller.NewRenderRetry(c, opts.Quota)}
	}
	if err := br.SetupWithManager(ctx, mgr, bindingOptions); err != nil {
		return fmt.Errorf("binding controller: %w", err)
	}
	var watcher *memberwatch.Watcher
	if opts.MemberWatches != nil {
		watcher = &memberwatch.Watcher{Connections: opts.MemberWatches, Log: mgr.GetLogger().WithName("memberwatch")}
	}
	// The aggregate phase reads the outcomes the executor is writing to
	// Push members' Works as the writes start.
	outcomes := &applier.Outcomes{}
	aggregator := &binding.Aggregator{Client: c, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-status"), Interpreter: interp,
		Reports: opts.Reports, Outcomes: outcomes, Holds: opts.Holds}
	outcomes.Reported = aggregator.WorkReported
	if err := (&execution.Reconciler{
		Client: c, MemberClients: opts.MemberClients, Access: opts.MemberAccess, Recorder: mgr.GetEventRecorder("flotilla-execution"),
		Options: opts.Execution, Health: opts.MemberHealth, MaxInFlightPerMember: opts.MaxInFlightPerMember, MemberTimeout: opts.MemberTimeout,
		WithdrawTimeout: opts.WithdrawTimeout, Watcher: watcher, Interpreter: interp, Reports: opts.Reports, Outcomes: outcomes,
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.WorkConcurrency}); err != nil {
		return fmt.Errorf("execution controller: %w", err)
	}
	if err := aggregator.SetupWithManager(mgr, bindingOptions); err != nil {
		return fmt.Errorf("status controller: %w", err)
	}
	return nil
}

// MemberClientsFrom adapts the member client cache (the hub's scoped
// identity in each member) to the execution controller's MemberClients.
func MemberClientsFrom(cache *memberclient.Cache) execution.MemberClients {
	return memberClients{cache: cache}
}

type memberClients struct{ cache *memberclient.Cache }

// MemberWatchesFrom watches members as the hub's scoped identity, the one
// Works are applied as, through connections of their own: a watch is a
// long request, which must not count in the member's health.
func MemberWatchesFrom(cache *memberclient.Cache) memberwatch.Connections {
	return &memberWatches{cache: cache, configs: map[string]watchConfig{}}
}

// watchConfig is a member's connection configuration and its watch copy.
type watchConfig struct{ conn, watch *rest.Config }

type memberWatches struct {
	cache *memberclient.Cache

	mu sync.Mutex
	// configs keeps each member's watch copy, so that the watcher sees a
	// new configuration only when the member's connection changed.
	configs map[string]watchConfig
}

func (m *memberWatches) WatchConfig(ctx context.Context, member string) (*rest.Config, error) {
	conn, err := m.cache.Get(ctx, member)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.configs[member]; ok && c.conn == conn.Config {
		return c.watch, nil
	}
	cfg := rest.CopyConfig(conn.Config)
	cfg.WrapTransport = nil
	m.configs[member] = watchConfig{conn: conn.Config, watch: cfg}
	return cfg, nil
}

func (m memberClients) ClientFor(ctx context.Context, member string) (client.Client, meta.RESTMapper, error) {
	conn, err := m.cache.Get(ctx, member)
	if err != nil {
		return nil, nil, err
	}
	return conn.Client, conn.Client.RESTMapper(), nil
}
