// Package agent is flotilla-agent's runtime. The agent runs in a Pull-mode
// member, which the hub does not reach inbound, with the hub credentials
// enrolment issued for it (a ServiceAccount confined to the member's
// execution namespace flotilla-es-<member> and its own MemberCluster). It
//
//   - watches the Works of its execution namespace only, and applies them to
//     its member with controllers/applier — the same semantics as Push
//     execution — writing per-manifest state and health into Work status;
//   - applies a Work only when it changed (or drift repair is due), so that
//     catching up after a hub outage writes nothing that is already there;
//   - reports the member's Kubernetes version, API enablements and the
//     estimator's capacity model into its MemberCluster's status;
//   - renews the Lease flotilla-agent in its execution namespace, the
//     heartbeat by which the hub tells it is alive;
//   - follows its credentials file, reconnecting to the hub with rotated
//     credentials without restarting.
//
// Member objects keep running whatever happens to the hub: the agent only
// stops applying while it cannot read its Works. docs/agent.md has the rules.
package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/flotilla-io/flotilla/addon/agent/credentials"
	"github.com/flotilla-io/flotilla/addon/agent/lease"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/customization"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
)

// Config configures the agent.
type Config struct {
	// Member is the agent's MemberCluster.
	Member string
	// Credentials is the hub kubeconfig file, followed for rotation.
	Credentials *credentials.File
	// MemberConfig reaches the member as the agent's own ServiceAccount.
	MemberConfig *rest.Config
	// Holder names this agent in its Lease (the Pod's name).
	Holder string
	// Execution says how often Works are looked at again; ResyncHealthy is
	// also the drift-repair period of unchanged Works.
	Execution applier.Options
	// StatusPeriod is how often the member's status is read; Heartbeat how
	// often lastHeartbeatTime is refreshed when nothing else changed.
	StatusPeriod, Heartbeat time.Duration
	// LeaseRenewInterval is how often the Lease is renewed; the well-known
	// AgentLeaseRenewInterval by default (tests shorten it).
	LeaseRenewInterval time.Duration
	// Concurrency is how many Works are applied at once.
	Concurrency int
	// MetricsAddr and HealthAddr are the managers' endpoints; "0" disables.
	MetricsAddr, HealthAddr string
	// Clock is the real clock when nil.
	Clock clock.WithTicker
}

func (c *Config) defaults() error {
	if c.Member == "" || c.Credentials == nil || c.MemberConfig == nil {
		return errors.New("agent: Member, Credentials and MemberConfig are required")
	}
	c.Execution.Default()
	if c.StatusPeriod <= 0 {
		c.StatusPeriod = 10 * time.Second
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 30 * time.Second
	}
	if c.LeaseRenewInterval <= 0 {
		c.LeaseRenewInterval = clusterv1alpha1.AgentLeaseRenewInterval
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Holder == "" {
		c.Holder = "flotilla-agent-" + c.Member
	}
	if c.MetricsAddr == "" {
		c.MetricsAddr = "0"
	}
	if c.HealthAddr == "" {
		c.HealthAddr = "0"
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// Hub reconnect backoff after a failed session (hub unreachable at start,
// credentials not accepted yet).
const (
	firstReconnect = time.Second
	maxReconnect   = 30 * time.Second
)

// member is the agent's one member, as the applier asks for it.
type member struct {
	name   string
	client client.Client
}

func (m member) ClientFor(_ context.Context, name string) (client.Client, meta.RESTMapper, error) {
	if name != m.name {
		return nil, nil, fmt.Errorf("this agent applies to member %s only, not %s", m.name, name)
	}
	return m.client, m.client.RESTMapper(), nil
}

// Run runs the agent until ctx ends. The hub side — Work watch, status,
// Lease — runs in a session that is rebuilt whenever the credentials file
// changes; what the agent knows it applied outlives sessions.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("member", cfg.Member)
	memberConfig := rest.CopyConfig(cfg.MemberConfig)
	memberConfig.UserAgent = "flotilla-agent"
	memberConfig.QPS, memberConfig.Burst = 50, 100
	memberClient, err := client.New(memberConfig, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return fmt.Errorf("member client: %w", err)
	}
	memberSet, err := kubernetes.NewForConfig(memberConfig)
	if err != nil {
		return fmt.Errorf("member client: %w", err)
	}
	s := &sessions{cfg: cfg, member: member{name: cfg.Member, client: memberClient}, memberSet: memberSet,
		applied: applier.NewApplied(cfg.Execution.ResyncHealthy), wakeups: make(chan event.GenericEvent, 1024),
		interpreter: interpreter.New(luavm.New(luavm.Limits{}))}
	// The watch of applied objects outlives hub sessions: what runs in the
	// member does not change with the hub's credentials.
	s.watcher = &memberwatch.Watcher{
		Connections: memberwatch.ConnectionsFunc(func(context.Context, string) (*rest.Config, error) { return memberConfig, nil }),
		Changed: func(key types.NamespacedName, edited bool) {
			if edited {
				s.applied.Forget(key) // an object's spec was changed there: apply in full
			}
			s.wakeups <- event.GenericEvent{Object: &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
		},
		Log: log.WithName("memberwatch"),
	}
	go func() { _ = s.watcher.Start(ctx) }()

	wait := firstReconnect
	for {
		started := cfg.Clock.Now()
		err := s.run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errCredentialsChanged) {
			log.Info("Hub credentials changed; reconnecting with the new ones")
			wait = firstReconnect
			continue
		}
		if cfg.Clock.Since(started) > maxReconnect {
			wait = firstReconnect // it ran a while: a new failure, not the same one
		}
		log.Error(err, "Hub session ended; reconnecting", "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.Clock.After(wait):
		}
		wait = min(2*wait, maxReconnect)
	}
}

var errCredentialsChanged = errors.New("hub credentials changed")

// sessions builds hub sessions: one controller-runtime manager each, its
// cache confined to the member's execution namespace.
type sessions struct {
	cfg       Config
	member    member
	memberSet kubernetes.Interface
	applied   *applier.Applied
	// watcher watches what the agent applied; wakeups carries the Works
	// whose objects changed to the current session's controller.
	watcher *memberwatch.Watcher
	wakeups chan event.GenericEvent
	// interpreter outlives sessions; each loads the customizations again.
	interpreter *interpreter.Interpreter
}

// run loads the credentials and runs one session until ctx ends, the
// session fails, or the credentials file changes.
func (s *sessions) run(ctx context.Context) error {
	hubConfig, err := s.cfg.Credentials.Load()
	if err != nil {
		return err
	}
	mgr, err := s.manager(hubConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{})
	go func() {
		if s.cfg.Credentials.WaitForChange(ctx) == nil {
			close(changed)
			cancel()
		}
	}()
	err = mgr.Start(ctx)
	select {
	case <-changed:
		return errCredentialsChanged
	default:
	}
	if err == nil && ctx.Err() == nil {
		err = errors.New("hub session stopped")
	}
	return err
}

func (s *sessions) manager(hubConfig *rest.Config) (manager.Manager, error) {
	cfg := s.cfg
	hubConfig = rest.CopyConfig(hubConfig)
	hubConfig.UserAgent = "flotilla-agent/" + cfg.Member
	hubConfig.QPS, hubConfig.Burst = 20, 40
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, clusterv1alpha1.AddToScheme, workv1alpha1.AddToScheme, configv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	ns := clusterv1alpha1.ExecutionNamespace(cfg.Member)
	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{
		Scheme: scheme,
		// The agent may read its own namespace only.
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		// Its MemberCluster it may get by name, never list or watch; its
		// Lease it writes itself.
		Client: client.Options{Cache: &client.CacheOptions{
			DisableFor: []client.Object{&clusterv1alpha1.MemberCluster{}, &coordinationv1.Lease{}},
		}},
		Metrics:                metricsserver.Options{BindAddress: cfg.MetricsAddr},
		HealthProbeBindAddress: cfg.HealthAddr,
		// A session is rebuilt with the same controller when credentials rotate.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("hub manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	hub := mgr.GetClient()
	// The platform's interpreter customizations, read from the hub, judge
	// what this agent applies as the hub judges what it applies itself.
	if err := (&customization.Reconciler{Client: hub, Interpreter: s.interpreter}).SetupWithManager(mgr, "agent-customization"); err != nil {
		return nil, err
	}
	works := &workReconciler{
		hub:    hub,
		member: cfg.Member,
		applier: &applier.Applier{Works: hub, Members: s.member, Access: applier.Confined{},
			Recorder: mgr.GetEventRecorder("flotilla-agent"), Options: cfg.Execution, Interpreter: s.interpreter},
		applied:  s.applied,
		watcher:  s.watcher,
		mode:     &syncModeGate{hub: hub, member: cfg.Member, ttl: cfg.StatusPeriod, clock: cfg.Clock},
		clock:    cfg.Clock,
		reports:  &pacing.Reports{Interval: cfg.Execution.ProgressInterval},
		outcomes: &applier.Outcomes{},
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("agent-works").
		For(&workv1alpha1.Work{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted()),
		)).
		WatchesRawSource(source.Channel(s.wakeups, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: cfg.Concurrency,
			// Failures are mostly the hub being away: retry soon, and at
			// least every 30s, rather than backing off for minutes.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](500*time.Millisecond, 30*time.Second),
		}).
		Complete(works)
	if err != nil {
		return nil, fmt.Errorf("Work controller: %w", err)
	}
	renewer := &lease.Renewer{
		Client: hub, Key: client.ObjectKey{Namespace: clusterv1alpha1.AgentLeaseNamespace(cfg.Member), Name: clusterv1alpha1.AgentLeaseName},
		Holder: cfg.Holder, Duration: clusterv1alpha1.AgentLeaseDurationSeconds * time.Second,
		Interval: cfg.LeaseRenewInterval, Clock: cfg.Clock,
	}
	reporter := &statusReporter{hub: hub, member: s.memberSet, name: cfg.Member, period: cfg.StatusPeriod, heartbeat: cfg.Heartbeat, clock: cfg.Clock}
	for _, r := range []manager.Runnable{renewer, reporter} {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// deletionStarted passes the update that marks a Work for deletion.
func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
