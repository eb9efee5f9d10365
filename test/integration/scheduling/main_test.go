// Package scheduling_test runs the scheduling controller against a real
// kube-apiserver: bindings and MemberClusters are written through the API,
// and the test reads back the placement and the Scheduled condition.
package scheduling_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Errors only: the decisions themselves are asserted, not logged.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration tests need a real apiserver:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := startScheduler(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

func startScheduler(ctx context.Context) error {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	r := &bindingcontroller.Placer{
		Client:        mgr.GetClient(),
		Scheduler:     scheduler.New(scheduler.WithLedger(assumed.New(0))),
		Recorder:      mgr.GetEventRecorder("flotilla-scheduler"),
		RetryInterval: 2 * time.Second,
	}
	// Four workers, as with --scheduler-workers=4: decisions stay serialised
	// while their writes overlap.
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}
