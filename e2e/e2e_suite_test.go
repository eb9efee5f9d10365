// Package e2e holds Flotilla's end-to-end specs. They run against a fleet
// chosen by E2E_BACKEND (backend_test.go): "local" (default) starts a hub and
// member clusters as local processes (package e2e/fleet); "kind" creates a
// kind management cluster with CAPD members (package e2e/kindfleet) and
// needs Docker.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

var (
	theFleet  *fleet.Fleet
	repoRoot  string
	startTime time.Duration
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	ctrllog.SetLogger(GinkgoLogr)
	RunSpecs(t, "Flotilla e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	repoRoot, err = filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	theBackend = newBackend(os.Getenv("E2E_BACKEND"))
	// Each backend bounds its own start: the local fleet minutes, kind
	// (management cluster, providers, CAPD members) much longer.
	theBackend.Start(ctx)
}, NodeTimeout(45*time.Minute))

var _ = AfterSuite(func(ctx SpecContext) {
	if theBackend != nil {
		theBackend.Stop(ctx)
	}
}, NodeTimeout(15*time.Minute))

// reportMemory records the resident memory of the hub's and one member's
// processes in the suite report.
func reportMemory() {
	rss, err := theFleet.ResidentMemory()
	Expect(err).NotTo(HaveOccurred())
	names := make([]string, 0, len(rss))
	for n := range rss {
		names = append(names, n)
	}
	sort.Strings(names)
	totals := map[string]int64{}
	lines := ""
	for _, n := range names {
		owner := filepath.Dir(n)
		totals[owner] += rss[n]
		lines += fmt.Sprintf("  %-36s %6d MiB\n", n, rss[n]>>20)
	}
	summary := fmt.Sprintf("hub %d MiB, member1 %d MiB\n%s", totals["hub"]>>20, totals["member1"]>>20, lines)
	AddReportEntry("resident memory after start", summary)
	GinkgoWriter.Print(summary)
}

// timeUnit scales the specs' timeouts: a minute on an idle 2-core machine.
const timeUnit = time.Minute

func eventually(ctx context.Context, f any) AsyncAssertion {
	return Eventually(ctx, f).WithPolling(time.Second)
}

// slowLabel marks specs that take minutes of waiting by design (a hub
// outage, long tolerations, measurements). `make test` leaves them out to
// stay within CI's time budget; `make test-e2e` runs every spec.
const slowLabel = "slow"
