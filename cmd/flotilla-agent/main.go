// Command flotilla-agent runs in a Pull-mode member (installed by the
// member's flotilla-agent ClusterResourceSet): it pulls the member's Works
// from the hub with the credentials enrolment issued for it, applies them,
// reports their status and the member's, and renews its Lease on the hub.
// It needs only outbound access to the hub; see addon/agent.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-io/flotilla/addon/agent"
	"github.com/flotilla-io/flotilla/addon/agent/credentials"
	agentmanifests "github.com/flotilla-io/flotilla/addon/agent/manifests"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

func main() {
	cfg := agent.Config{}
	var kubeconfig, hubKubeconfig string
	var credentialsPoll time.Duration
	fs := pflag.CommandLine
	fs.StringVar(&cfg.Member, "member", "", "Name of this member's MemberCluster on the hub (required).")
	fs.StringVar(&hubKubeconfig, "hub-kubeconfig", agentmanifests.HubMountPath+"/"+agentmanifests.KubeconfigKey, "Kubeconfig of the agent's hub credentials, as mounted from the Secret enrolment issues; followed for rotation.")
	fs.DurationVar(&credentialsPoll, "credentials-poll-interval", 10*time.Second, "How often the hub kubeconfig file is checked for new content.")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the member; in-cluster configuration (the Pod's ServiceAccount) when empty.")
	fs.DurationVar(&cfg.Execution.ResyncUnhealthy, "resync-unhealthy", 10*time.Second, "How soon a Work with an object not applied or not healthy is looked at again.")
	fs.DurationVar(&cfg.Execution.ResyncHealthy, "resync-healthy", 60*time.Second, "How soon a healthy Work is looked at again; an unchanged Work is applied again (drift repair) this often.")
	fs.DurationVar(&cfg.Execution.ProgressInterval, "status-progress-interval", pacing.DefaultProgressInterval, "The least time between two writes of a Work's status on the hub that only move progress (replica counts, messages) while nothing changes state; a change of state (applied or not, health, a condition) is written at once. 0 writes every change at once.")
	fs.DurationVar(&cfg.StatusPeriod, "status-update-period", 10*time.Second, "How often the member's version, API enablements and capacity model are read and, when changed, written to its MemberCluster.")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat-period", 30*time.Second, "Refresh the MemberCluster's lastHeartbeatTime at least this often.")
	fs.IntVar(&cfg.Concurrency, "concurrency", 4, "How many Works are applied at once.")
	fs.StringVar(&cfg.MetricsAddr, "metrics-bind-address", "0", "Address of the metrics endpoint; 0 disables it.")
	fs.StringVar(&cfg.HealthAddr, "health-probe-bind-address", "0", "Address of /healthz; 0 disables it.")
	klog.InitFlags(flag.CommandLine)
	fs.AddGoFlagSet(flag.CommandLine)
	pflag.Parse()
	ctrl.SetLogger(klog.Background())

	if err := run(cfg, kubeconfig, hubKubeconfig, credentialsPoll); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-agent:", err)
		os.Exit(1)
	}
}

func run(cfg agent.Config, kubeconfig, hubKubeconfig string, credentialsPoll time.Duration) error {
	if cfg.Member == "" {
		return fmt.Errorf("--member is required")
	}
	if cfg.Execution.ProgressInterval < 0 {
		return fmt.Errorf("--status-progress-interval must not be negative (0 writes every change at once), got %s", cfg.Execution.ProgressInterval)
	}
	memberConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("member kubeconfig: %w", err)
	}
	cfg.MemberConfig = memberConfig
	cfg.Credentials = &credentials.File{Path: hubKubeconfig, Interval: credentialsPoll}
	cfg.Holder = os.Getenv("POD_NAME")
	if cfg.Holder == "" {
		cfg.Holder, _ = os.Hostname()
	}
	return agent.Run(ctrl.SetupSignalHandler(), cfg)
}
