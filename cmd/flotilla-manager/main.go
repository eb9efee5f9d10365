// Command flotilla-manager is Flotilla's hub controller manager. It runs on
// the Cluster API management cluster (namespace flotilla-system) and hosts
// enrolment, health and taints, the detector, the scheduler, Work rendering
// and push execution, status aggregation, eviction, quota and the admission
// webhooks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/detector"
	"github.com/flotilla-io/flotilla/controllers/enrolment"
	"github.com/flotilla-io/flotilla/controllers/execution"
	"github.com/flotilla-io/flotilla/controllers/failover"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/controllers/propagation"
	quotacontroller "github.com/flotilla-io/flotilla/controllers/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
	"github.com/flotilla-io/flotilla/internal/removal"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/webhooks"
)

// imageRepository prefixes the add-on images when their flags are empty.
const imageRepository = "ghcr.io/flotilla-io/"

// options are the manager's flags.
type options struct {
	metricsAddr            string
	metricsSecure          bool
	healthAddr             string
	profilerAddr           string
	webhookPort            int
	webhookCertDir         string
	enableWebhooks         bool
	webhookConfiguration   string
	leaderElect            bool
	schedulerRetryInterval time.Duration
	schedulerWorkers       int
	assumedCapacityGrace   time.Duration
	assumedCapacityMaxHold time.Duration
	leaderElectNamespace   string
	leaseDuration          time.Duration
	renewDeadline          time.Duration
	retryPeriod            time.Duration
	memberApplyTimeout     time.Duration
	memberMaxBackoff       time.Duration
	memberConcurrentWorks  int
	concurrentWorkSyncs    int
	concurrentBindingSyncs int
	memberWithdrawTimeout  time.Duration
	watchMemberObjects     bool
	kubeAPIQPS             float32
	kubeAPIBurst           int
	clusterAPIQPS          float32
	clusterAPIBurst        int
	execution              execution.Options
	templateBatching       detector.Batching
	removals               removal.Limiter
	enrolment              enrolment.Options
	failover               failover.Options
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to authenticated and authorised clients only (a bearer token allowed to get the non-resource URL /metrics); false serves plain HTTP to anyone who reaches the port.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":9440", "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.profilerAddr, "profiler-address", "", "Address Go's pprof endpoints bind to (e.g. localhost:6060), as Cluster API's managers; empty: none.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/", "Directory holding tls.crt and tls.key of the webhook server.")
	fs.BoolVar(&o.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks.")
	fs.StringVar(&o.webhookConfiguration, "webhook-configuration-name", quotacontroller.DefaultWebhookConfiguration, "Name of the ValidatingWebhookConfiguration holding the manager's webhooks; the manager keeps its quota warning webhooks to the namespaces holding a FederatedResourceQuota. The ClusterRole rule and the flotilla-manager-writes admission policy name it too: change all three together.")
	fs.IntVar(&o.schedulerWorkers, "scheduler-workers", 1, "How many bindings are scheduled at once. Decisions are still made one at a time (held capacity and quota are charged in order) and more workers overlap the API writes that record them, but bindings waiting for quota are then no longer retried strictly oldest first.")
	fs.DurationVar(&o.schedulerRetryInterval, "scheduler-retry-interval", 30*time.Second, "How often a binding that could not be placed is tried again when nothing it watches changes.")
	fs.DurationVar(&o.assumedCapacityGrace, "assumed-capacity-grace", 30*time.Second, "How long replicas just placed on a member keep counting against its capacity, once the member applied their Work, until its capacity model is newer (the time an applied Work takes to show as bound Pods).")
	fs.DurationVar(&o.assumedCapacityMaxHold, "assumed-capacity-max-hold", 90*time.Second, "The longest replicas just placed on a member count against its capacity when its capacity model does not change (an estimator publishes an unchanged model only at its heartbeat); 0 waits for a newer model however long. At least --assumed-capacity-grace; followed to the second.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; the manager's own namespace when empty.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits, from the leader's last renewal, before it takes the Lease over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leadership (and exits).")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	fs.DurationVar(&o.memberApplyTimeout, "member-apply-timeout", execution.DefaultMemberTimeout, "How long applying one Work to a Push-mode member may take before the member counts as unreachable and is left alone for a backoff.")
	fs.DurationVar(&o.memberMaxBackoff, "member-unreachable-max-backoff", memberclient.DefaultMaxBackoff, "The longest a Push-mode member that did not answer is left alone before the hub tries it again (the backoff doubles from 2s up to it); also the longest a member that answers again waits for its Works.")
	fs.Float64Var(&o.removals.Share, "member-removal-share", 0.25, "Share of a member's Works whose objects may be removed from it within --member-removal-window; more removals wait their turn, reported by the MemberCluster's RemovalsPaced condition and an event (1 removes everything at once).")
	fs.IntVar(&o.removals.Burst, "member-removal-burst", 10, "Removals always allowed per member within --member-removal-window, whatever the share.")
	fs.DurationVar(&o.removals.Window, "member-removal-window", time.Minute, "Span over which --member-removal-share is counted.")
	fs.DurationVar(&o.memberWithdrawTimeout, "member-withdraw-timeout", execution.DefaultWithdrawTimeout, "How long a deleted Work waits for its member to answer (Push) or its agent's Lease to be renewed (Pull) before it is released without its objects removed; they are named in LeftInMember events and the MemberCluster's ObjectsLeftBehind condition.")
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", 40, "Requests per second to the hub's apiserver (client-side rate limit), as Karmada's controller-manager.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 60, "Burst of requests to the hub's apiserver above --kube-api-qps.")
	fs.Float32Var(&o.clusterAPIQPS, "cluster-api-qps", 40, "Requests per second to each Push-mode member's apiserver, as Karmada's --cluster-api-qps.")
	fs.IntVar(&o.clusterAPIBurst, "cluster-api-burst", 60, "Burst of requests to each member's apiserver above --cluster-api-qps.")
	fs.BoolVar(&o.watchMemberObjects, "watch-member-objects", true, "Watch the objects Works applied in Push-mode members (metadata only, Flotilla's own, per namespace) so that a binding's status follows its members at once; false refreshes status only by re-applying every --resync-unhealthy/--resync-healthy.")
	fs.DurationVar(&o.execution.ResyncUnhealthy, "resync-unhealthy", 10*time.Second, "How soon a Work with an object not applied or not healthy is applied again when nothing wakes it earlier.")
	fs.DurationVar(&o.execution.ResyncHealthy, "resync-healthy", 5*time.Minute, "How often a healthy Work is applied again (drift repair); with --watch-member-objects a change in the member is repaired at once.")
	fs.DurationVar(&o.execution.ProgressInterval, "status-progress-interval", pacing.DefaultProgressInterval, "The least time between two writes of a Work's or a binding's status on the hub that only move progress (replica counts, messages) while nothing changes state; a change of state (applied or not, health, a condition) is written at once, with the progress so far. 0 writes every change at once.")
	fs.DurationVar(&o.templateBatching.QuietPeriod, "template-batch-quiet-period", 250*time.Millisecond, "How long a template no policy has claimed yet waits for no other new template to arrive, so that a burst of applies to the hub is served before the propagation of it starts (as kube-controller-manager's --endpoint-updates-batch-period); 0 propagates every template at once.")
	fs.DurationVar(&o.templateBatching.MaxWait, "template-batch-max-wait", 5*time.Second, "The longest a new template waits while others keep arriving (--template-batch-quiet-period).")
	fs.IntVar(&o.concurrentWorkSyncs, "concurrent-work-syncs", propagation.DefaultWorkConcurrency, "How many Works are applied or refreshed at once over all Push-mode members (--member-concurrent-works bounds each member).")
	fs.IntVar(&o.concurrentBindingSyncs, "concurrent-resourcebinding-syncs", propagation.DefaultBindingConcurrency, "How many ResourceBindings and ClusterResourceBindings each binding phase (rendering Works, aggregating status) handles at once.")
	fs.IntVar(&o.memberConcurrentWorks, "member-concurrent-works", execution.DefaultMaxInFlightPerMember, "How many Works of one Push-mode member are applied at once, and apart how many are read back (a change seen in the member); the rest wait without holding a worker, so a slow member delays only its own Works.")

	e := &o.enrolment
	fs.BoolVar(&e.EnrolAll, "enrol-all", false, "Enrol every CAPI Cluster not labelled flotilla.io/enroll=false, not only those (or whose namespace is) labelled flotilla.io/enroll=true.")
	fs.StringVar(&e.Version, "flotilla-version", "dev", "Flotilla version: labels the add-ons and tags their default images.")
	fs.StringVar(&e.EstimatorImage, "estimator-image", "", "Image of flotilla-estimator installed in members; "+imageRepository+"flotilla-estimator:<flotilla-version> when empty.")
	fs.StringVar(&e.AgentImage, "agent-image", "", "Image of flotilla-agent installed in Pull-mode members; "+imageRepository+"flotilla-agent:<flotilla-version> when empty.")
	fs.DurationVar(&e.DrainTimeout, "member-drain-timeout", 10*time.Minute, "How long a leaving member's Works may take to move away before the member is removed anyway.")
	fs.DurationVar(&e.SyncPeriod, "member-sync-period", 30*time.Second, "How often an enrolled member's heartbeat, capacity model and identity are refreshed.")
	fs.DurationVar(&e.EstimatorPublishInterval, "estimator-publish-interval", 10*time.Second, "The estimator publishes its capacity model at most this often.")
	fs.StringVar(&e.HubAPIServer, "hub-apiserver-url", "", "URL at which Pull-mode agents reach the hub's apiserver; the manager's own apiserver URL when empty.")
	o.failover.AddFlags(fs)
}

// complete fills the defaults that depend on other flags or the hub.
func (o *options) complete(cfg *rest.Config) error {
	e := &o.enrolment
	if e.EstimatorImage == "" {
		e.EstimatorImage = imageRepository + "flotilla-estimator:" + e.Version
	}
	if e.AgentImage == "" {
		e.AgentImage = imageRepository + "flotilla-agent:" + e.Version
	}
	if e.HubAPIServer == "" {
		e.HubAPIServer = cfg.Host
	}
	if len(e.HubCAData) == 0 {
		e.HubCAData = cfg.CAData
		if len(e.HubCAData) == 0 && cfg.CAFile != "" {
			ca, err := os.ReadFile(cfg.CAFile)
			if err != nil {
				return fmt.Errorf("read the hub CA for agents: %w", err)
			}
			e.HubCAData = ca
		}
	}
	return nil
}

func main() {
	opts := &options{}
	opts.addFlags(pflag.CommandLine)
	klog.InitFlags(flag.CommandLine)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(klog.Background())

	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-manager:", err)
		os.Exit(1)
	}
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		clusterv1alpha1.AddToScheme, policyv1alpha1.AddToScheme, workv1alpha1.AddToScheme, configv1alpha1.AddToScheme,
		capiv1.AddToScheme, addonsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// metricsOptions serves the metrics endpoint; secure, every scrape is
// checked with the hub's TokenReview and SubjectAccessReview.
func metricsOptions(opts *options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.metricsAddr}
	if opts.metricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

func run(opts *options) error {
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("hub kubeconfig: %w", err)
	}
	if err := opts.complete(cfg); err != nil {
		return err
	}
	if err := opts.failover.Pacing.Validate(); err != nil {
		return err
	}
	if opts.leaderElect && !(opts.retryPeriod > 0 && opts.retryPeriod < opts.renewDeadline && opts.renewDeadline < opts.leaseDuration) {
		return fmt.Errorf("leader election needs 0 < --leader-elect-retry-period (%s) < --leader-elect-renew-deadline (%s) < --leader-elect-lease-duration (%s)",
			opts.retryPeriod, opts.renewDeadline, opts.leaseDuration)
	}
	if opts.assumedCapacityMaxHold < 0 || (opts.assumedCapacityMaxHold > 0 && opts.assumedCapacityMaxHold < opts.assumedCapacityGrace) {
		return fmt.Errorf("--assumed-capacity-max-hold must be 0 or at least --assumed-capacity-grace (%s), got %s", opts.assumedCapacityGrace, opts.assumedCapacityMaxHold)
	}
	if opts.memberApplyTimeout <= 0 {
		return fmt.Errorf("--member-apply-timeout must be positive, got %s", opts.memberApplyTimeout)
	}
	if opts.memberMaxBackoff <= 0 {
		return fmt.Errorf("--member-unreachable-max-backoff must be positive, got %s", opts.memberMaxBackoff)
	}
	if opts.memberWithdrawTimeout <= 0 {
		return fmt.Errorf("--member-withdraw-timeout must be positive, got %s", opts.memberWithdrawTimeout)
	}
	if !(opts.removals.Share > 0 && opts.removals.Share <= 1) {
		return fmt.Errorf("--member-removal-share must be in (0, 1], got %g", opts.removals.Share)
	}
	if opts.removals.Burst < 1 || opts.removals.Window <= 0 {
		return fmt.Errorf("--member-removal-burst must be at least 1 and --member-removal-window positive, got %d and %s", opts.removals.Burst, opts.removals.Window)
	}
	if opts.execution.ResyncUnhealthy <= 0 || opts.execution.ResyncHealthy <= 0 {
		return fmt.Errorf("--resync-unhealthy and --resync-healthy must be positive, got %s and %s", opts.execution.ResyncUnhealthy, opts.execution.ResyncHealthy)
	}
	if opts.kubeAPIQPS <= 0 || opts.kubeAPIBurst < 1 || opts.clusterAPIQPS <= 0 || opts.clusterAPIBurst < 1 {
		return fmt.Errorf("--kube-api-qps, --kube-api-burst, --cluster-api-qps and --cluster-api-burst must be positive, got %g, %d, %g, %d",
			opts.kubeAPIQPS, opts.kubeAPIBurst, opts.clusterAPIQPS, opts.clusterAPIBurst)
	}
	cfg.QPS, cfg.Burst = opts.kubeAPIQPS, opts.kubeAPIBurst
	if opts.schedulerWorkers < 1 {
		return fmt.Errorf("--scheduler-workers must be at least 1, got %d", opts.schedulerWorkers)
	}
	if opts.concurrentWorkSyncs < 1 {
		return fmt.Errorf("--concurrent-work-syncs must be at least 1, got %d", opts.concurrentWorkSyncs)
	}
	if opts.concurrentBindingSyncs < 1 {
		return fmt.Errorf("--concurrent-resourcebinding-syncs must be at least 1, got %d", opts.concurrentBindingSyncs)
	}
	if opts.memberConcurrentWorks < 1 {
		return fmt.Errorf("--member-concurrent-works must be at least 1, got %d", opts.memberConcurrentWorks)
	}
	if b := &opts.templateBatching; b.QuietPeriod < 0 || (b.QuietPeriod > 0 && b.MaxWait < b.QuietPeriod) {
		return fmt.Errorf("--template-batch-quiet-period must not be negative (0 claims every template at once) and --template-batch-max-wait must be at least it, got %s and %s", b.QuietPeriod, b.MaxWait)
	}
	if opts.execution.ProgressInterval < 0 {
		return fmt.Errorf("--status-progress-interval must not be negative (0 writes every change at once), got %s", opts.execution.ProgressInterval)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.healthAddr,
		PprofBindAddress:        opts.profilerAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "flotilla-manager",
		LeaderElectionNamespace: opts.leaderElectNamespace,
		LeaseDuration:           &opts.leaseDuration,
		RenewDeadline:           &opts.renewDeadline,
		RetryPeriod:             &opts.retryPeriod,
		// A leader that stops cleanly hands over at once instead of after
		// a lease duration: main returns when the manager stops.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: opts.webhookPort, CertDir: opts.webhookCertDir}),
		// managedFields are most of a cached Work's metadata and nothing on
		// the hub reads them from the cache (the field owners Flotilla reads
		// are those of member objects, read live): a fleet's Works and
		// bindings cost the manager less memory without them.
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: cacheByObject(opts)},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if opts.enableWebhooks {
		if err := webhooks.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up webhooks: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := setupControllers(ctx, mgr, opts); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// cacheByObject narrows what the manager's cache reads of a kind to what
// its ClusterRole allows.
func cacheByObject(opts *options) map[client.Object]cache.ByObject {
	if !opts.enableWebhooks {
		return nil
	}
	obj, byObject := quotacontroller.WebhookConfigurationCache(opts.webhookConfiguration)
	return map[client.Object]cache.ByObject{obj: byObject}
}

func setupControllers(ctx context.Context, mgr ctrl.Manager, opts *options) error {
	if err := (&enrolment.Reconciler{Options: opts.enrolment}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return fmt.Errorf("set up enrolment: %w", err)
	}
	quotas := tracker.New(tracker.Options{})
	sched := scheduler.New(scheduler.WithLedger(assumed.New(opts.assumedCapacityGrace).WithMaxHold(opts.assumedCapacityMaxHold, nil)), scheduler.WithQuotaChecker(quotas))
	if err := (&binding.Placer{
		Client: mgr.GetClient(), Scheduler: sched,
		Recorder:      mgr.GetEventRecorder("flotilla-scheduler"),
		RetryInterval: opts.schedulerRetryInterval,
		Wakeups:       []source.TypedSource[reconcile.Request]{quotacontroller.NewRetry(mgr.GetClient(), quotas)},
	}).SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: opts.schedulerWorkers}); err != nil {
		return fmt.Errorf("set up scheduling: %w", err)
	}
	if err := quotacontroller.SetupWithManager(ctx, mgr, quotas, controller.Options{}); err != nil {
		return fmt.Errorf("set up quota: %w", err)
	}
	if opts.enableWebhooks {
		if err := (&quotacontroller.WebhookScope{Client: mgr.GetClient(), Configuration: opts.webhookConfiguration}).SetupWithManager(mgr, controller.Options{}); err != nil {
			return fmt.Errorf("set up the quota warning scope: %w", err)
		}
	}
	health := memberclient.NewHealth()
	health.MaxBackoff = opts.memberMaxBackoff
	connections := memberclient.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetScheme(), health)
	connections.QPS, connections.Burst = opts.clusterAPIQPS, opts.clusterAPIBurst
	members := propagation.MemberClientsFrom(connections)
	var watches memberwatch.Connections
	if opts.watchMemberObjects {
		watches = propagation.MemberWatchesFrom(connections)
	}
	access := &enrolment.Access{Reader: mgr.GetAPIReader()}
	if err := propagation.SetupWithManager(ctx, mgr, propagation.Options{
		MemberClients: members, MemberAccess: access, MemberHealth: health, Quota: quotas,
		MemberTimeout: opts.memberApplyTimeout, MaxInFlightPerMember: opts.memberConcurrentWorks, WorkConcurrency: opts.concurrentWorkSyncs, BindingConcurrency: opts.concurrentBindingSyncs, WithdrawTimeout: opts.memberWithdrawTimeout,
		Removals: &opts.removals, Execution: opts.execution, MemberWatches: watches, Holds: sched.Ledger(),
		TemplateBatching: &opts.templateBatching,
	}); err != nil {
		return fmt.Errorf("set up propagation: %w", err)
	}
	failoverOpts := opts.failover
	failoverOpts.DrainTimeout = opts.enrolment.DrainTimeout
	if err := failover.SetupWithManager(ctx, mgr, failoverOpts); err != nil {
		return fmt.Errorf("set up failover: %w", err)
	}
	return nil
}
