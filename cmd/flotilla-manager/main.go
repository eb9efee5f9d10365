// Command flotilla-manager is Flotilla's hub controller manager. It runs on
// the Cluster API management cluster (namespace flotilla-system) and hosts
// enrolment, health and taints, the detector, the scheduler, Work rendering
// and push execution, status aggregation, eviction, quota and the admission
// webhooks.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/webhooks"
)

// options are the manager's flags.
type options struct {
	metricsAddr          string
	healthAddr           string
	webhookPort          int
	webhookCertDir       string
	enableWebhooks       bool
	leaderElect          bool
	leaderElectNamespace string
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":9440", "Address the /healthz and /readyz endpoints bind to.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/", "Directory holding tls.crt and tls.key of the webhook server.")
	fs.BoolVar(&o.enableWebhooks, "enable-webhooks", true, "Serve the admission webhooks.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease; the manager's own namespace when empty.")
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
		clusterv1alpha1.AddToScheme, policyv1alpha1.AddToScheme, workv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.healthAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "flotilla-manager",
		LeaderElectionNamespace: opts.leaderElectNamespace,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: opts.webhookPort, CertDir: opts.webhookCertDir}),
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
	return mgr.Start(ctx)
}
