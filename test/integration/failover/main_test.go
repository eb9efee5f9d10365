// Package failover_test specifies failover against a real kube-apiserver
// (test/testenv, with Flotilla's and Cluster API's CRDs): the scheduling
// controller and every failover controller (controllers/failover) run
// in-process, in a manager each test starts with its own settings (grace
// period, eviction rates, storm threshold). No Cluster API controller runs:
// tests write the CAPI Clusters' conditions and the Machines as Cluster API
// would, and the bindings' status as the status controller would.
package failover_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/failover"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/internal/throttle"
	"github.com/flotilla-io/flotilla/test/testenv"
)

var hub *testenv.Env

func TestMain(m *testing.M) {
	// Quiet unless FLOTILLA_TEST_LOG is set: failures say what they waited for.
	logger := logr.Discard()
	if os.Getenv("FLOTILLA_TEST_LOG") != "" {
		logger = klog.Background()
	}
	ctrl.SetLogger(logger)
	var err error
	if hub, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "failover integration tests need a real apiserver:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = hub.Stop()
	os.Exit(code)
}

// settings are a test's manager flags; zero fields take fast defaults.
type settings struct {
	grace         time.Duration
	rate          float64
	secondaryRate float64
	threshold     float64
	gracefulEvict time.Duration
	drainTimeout  time.Duration
}

// startManager runs the scheduler and the failover controllers until the
// test ends.
func startManager(t *testing.T, s settings) {
	t.Helper()
	if s.grace == 0 {
		s.grace = 3 * time.Second
	}
	if s.rate == 0 {
		s.rate = 20
	}
	if s.threshold == 0 {
		s.threshold = throttle.DefaultUnhealthyThreshold
	}
	if s.gracefulEvict == 0 {
		s.gracefulEvict = time.Minute
	}
	if s.drainTimeout == 0 {
		s.drainTimeout = time.Minute
	}
	mgr, err := ctrl.NewManager(hub.Config, ctrl.Options{
		Scheme:                 hub.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := (&binding.Placer{
		Client:        mgr.GetClient(),
		Scheduler:     scheduler.New(scheduler.WithLedger(assumed.New(0))),
		Recorder:      mgr.GetEventRecorder("flotilla-scheduler"),
		RetryInterval: 2 * time.Second,
	}).SetupWithManager(mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	err = failover.SetupWithManager(ctx, mgr, failover.Options{
		GracePeriod:             s.grace,
		DefaultTaintPolicies:    true,
		Pacing:                  throttle.Config{Rate: s.rate, SecondaryRate: s.secondaryRate, UnhealthyThreshold: s.threshold},
		GracefulEvictionTimeout: s.gracefulEvict,
		DrainTimeout:            s.drainTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager stopped: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
}
