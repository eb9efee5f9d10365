// Package e2e holds Flotilla's end-to-end specs. They run against a fleet
// chosen by E2E_BACKEND: "local" (default) starts a hub and member clusters
// as local processes (package e2e/fleet); "kind" needs Docker.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
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
	backend := os.Getenv("E2E_BACKEND")
	if backend == "" {
		backend = "local"
	}
	if backend != "local" {
		Skip(fmt.Sprintf("E2E_BACKEND=%s is not available yet: only the local backend runs here", backend))
	}
	var err error
	repoRoot, err = filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())

	dir := os.Getenv("E2E_FLEET_DIR")
	if dir == "" {
		dir = GinkgoT().TempDir()
	}
	manager := filepath.Join(repoRoot, "bin", "flotilla-manager")
	Expect(manager).To(BeAnExistingFile(), "build flotilla-manager first: make build")

	began := time.Now()
	theFleet, err = fleet.Start(ctx, fleet.Options{
		Dir:      dir,
		RepoRoot: repoRoot,
		Members:  fleet.DefaultMembers(),
		Manager:  &fleet.ManagerOptions{Binary: manager, Args: fleet.DefaultManagerArgs()},
		Progress: GinkgoWriter,
	})
	Expect(err).NotTo(HaveOccurred())
	startTime = time.Since(began)
	AddReportEntry("fleet start time", startTime.Round(time.Millisecond).String())
	reportMemory()
}, NodeTimeout(5*time.Minute))

var _ = AfterSuite(func() {
	if theFleet == nil {
		return
	}
	pids := theFleet.Processes()
	theFleet.Stop()
	for name, pid := range pids {
		Eventually(func() error { return syscall.Kill(pid, 0) }).WithTimeout(15*time.Second).
			Should(MatchError(syscall.ESRCH), "process %s (pid %d) still runs after the fleet stopped", name, pid)
	}
})

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
