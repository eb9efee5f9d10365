// Package enrolment_test specifies enrolment against real apiservers: the
// hub is test/testenv's kube-apiserver with Flotilla's and Cluster API's
// CRDs, and a second envtest apiserver with its own kube-controller-manager
// (token controller only) stands in for every member. No CAPI controller
// runs: the tests write Clusters, their status and kubeconfig Secrets as
// Cluster API would, and run the EnrolmentReconciler (and the member health
// controller) in-process.
package enrolment_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-io/flotilla/controllers/enrolment"
	"github.com/flotilla-io/flotilla/controllers/health"
	"github.com/flotilla-io/flotilla/test/testenv"
)

// Settings of the in-process manager: short periods keep the suite fast.
const (
	syncPeriod   = time.Second
	drainTimeout = 6 * time.Second
	estimatorImg = "registry.example/flotilla-estimator:test"
	agentImg     = "registry.example/flotilla-agent:test"
)

var (
	hub *testenv.Env

	// memberEnv is the member apiserver; memberAdmin and memberKubeconfig
	// are its admin (system:masters) client and kubeconfig — what CAPI's
	// <cluster>-kubeconfig Secret holds.
	memberEnv        *envtest.Environment
	memberAdmin      client.Client
	memberKubeconfig []byte
	memberConfig     *rest.Config
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "enrolment integration tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	// Quiet unless FLOTILLA_TEST_LOG is set: failures say what they waited for.
	logger := logr.Discard()
	if os.Getenv("FLOTILLA_TEST_LOG") != "" {
		logger = klog.Background()
	}
	ctrl.SetLogger(logger)
	var err error
	if hub, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = hub.Stop() }()

	stopMember, err := startMember()
	if err != nil {
		return 0, err
	}
	defer stopMember()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go testenv.FillServiceAccountTokens(ctx, hub.Config, 200*time.Millisecond)
	if err := startManager(ctx); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// startMember starts the member apiserver and its kube-controller-manager
// with only the ServiceAccount token controller, which fills in the
// service-account-token Secrets the hub identity relies on.
func startMember() (func(), error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(root, "bin")
	memberEnv = &envtest.Environment{BinaryAssetsDirectory: bin}
	if _, err := memberEnv.Start(); err != nil {
		return nil, fmt.Errorf("start member apiserver: %w", err)
	}
	stop := func() { _ = memberEnv.Stop() }
	admin, err := memberEnv.AddUser(envtest.User{Name: "capi-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		stop()
		return nil, err
	}
	memberConfig = admin.Config()
	if memberKubeconfig, err = admin.KubeConfig(); err != nil {
		stop()
		return nil, err
	}
	if memberAdmin, err = client.New(memberConfig, client.Options{Scheme: clientgoscheme.Scheme}); err != nil {
		stop()
		return nil, err
	}

	dir, err := os.MkdirTemp("", "flotilla-member-kcm-")
	if err != nil {
		stop()
		return nil, err
	}
	kubeconfig, ca := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(kubeconfig, memberKubeconfig, 0o600); err != nil {
		stop()
		return nil, err
	}
	if err := os.WriteFile(ca, memberConfig.CAData, 0o600); err != nil {
		stop()
		return nil, err
	}
	kcm := exec.Command(filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--controllers=serviceaccount-token-controller",
		"--service-account-private-key-file="+filepath.Join(memberEnv.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--root-ca-file="+ca,
		"--leader-elect=false",
		"--secure-port=0",
	)
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		stop()
		return nil, err
	}
	kcm.Stdout, kcm.Stderr = logFile, logFile
	if err := kcm.Start(); err != nil {
		stop()
		return nil, fmt.Errorf("start member kube-controller-manager: %w", err)
	}
	return func() {
		_ = kcm.Process.Kill()
		_ = kcm.Wait()
		_ = logFile.Close()
		_ = os.RemoveAll(dir)
		stop()
	}, nil
}

// startManager runs the EnrolmentReconciler in-process against the hub.
func startManager(ctx context.Context) error {
	mgr, err := ctrl.NewManager(hub.Config, ctrl.Options{
		Scheme:                 hub.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return err
	}
	r := &enrolment.Reconciler{Options: enrolment.Options{
		EstimatorImage: estimatorImg, AgentImage: agentImg, Version: "v0.0.0-test",
		SyncPeriod: syncPeriod, DrainTimeout: drainTimeout,
		HubAPIServer: hub.Config.Host, HubCAData: hub.Config.CAData,
	}}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return err
	}
	// Member health (Reachable, ControlPlaneAvailable, Ready) is its own controller's.
	if err := (&health.Reconciler{}).SetupWithManager(mgr, controller.Options{}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("manager cache did not sync")
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
