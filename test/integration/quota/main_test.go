// Package quota_test runs FederatedResourceQuota against a real
// kube-apiserver: the scheduling controller with the quota tracker as its
// quota checker, the retry sources, the quota controller and the binding
// controller (which charges what bindings render) run in-process;
// bindings, quotas and members are written through the API, and the tests
// read back placements, conditions and quota status. The admission webhooks
// (the quota validation and the workload warnings) are served by testenv.
package quota_test

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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
	quotacontroller "github.com/flotilla-io/flotilla/controllers/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/test/testenv"
)

var env *testenv.Env

// schedulerRetryInterval is the scheduling controller's periodic retry, far
// longer than any test: a binding waiting on quota that is placed within a
// test was retried because quota freed, not by the clock.
const schedulerRetryInterval = time.Hour

func TestMain(m *testing.M) {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration tests need a real apiserver:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = startManager(ctx)
	if err == nil {
		err = startWebhookScope(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

// startManager wires the quota tracker, the scheduler and the controllers
// as flotilla-manager does.
func startManager(ctx context.Context) error {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	quotas := tracker.New(tracker.Options{})
	r := &bindingcontroller.Placer{
		Client:        mgr.GetClient(),
		Scheduler:     scheduler.New(scheduler.WithLedger(assumed.New(0)), scheduler.WithQuotaChecker(quotas)),
		Recorder:      mgr.GetEventRecorder("flotilla-scheduler"),
		RetryInterval: schedulerRetryInterval,
		Wakeups:       []source.TypedSource[reconcile.Request]{quotacontroller.NewRetry(mgr.GetClient(), quotas)},
	}
	if err := r.SetupWithManager(mgr, controller.Options{}); err != nil {
		return err
	}
	if err := quotacontroller.SetupWithManager(ctx, mgr, quotas, controller.Options{}); err != nil {
		return err
	}
	// The binding controller checks and charges what bindings render.
	works := &bindingcontroller.Renderer{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-binding"),
		Quota:        quotas,
		QuotaWakeups: []source.TypedSource[reconcile.Request]{quotacontroller.NewRenderRetry(mgr.GetClient(), quotas)},
	}
	if err := works.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}
