package bench

import (
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestMain gives the benchmarks' own watches (controller-runtime caches of
// the hub and members) a logger that prints errors only: without one,
// controller-runtime prints a stack trace 30 s in and drops their errors.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	os.Exit(m.Run())
}
