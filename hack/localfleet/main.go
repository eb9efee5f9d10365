// Command localfleet runs the embedded default fleet of `make dev`: a hub and
// three member clusters as local processes, with Cluster API managing the
// members and flotilla-manager on the hub. Once the members are enrolled it
// applies the fleet-web sample (examples/fleet-web.yaml), prints where it
// runs and how to reach each cluster, and runs until interrupted, then stops
// every process it started.
//
// The terminal shows steps, what is awaited, and the summary: every
// component logs to its own file under the state directory, and what logs
// inside this process (client-go, controller-runtime) goes to
// <dir>/localfleet.log (routeLogs).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

func main() {
	root := flag.String("repo", ".", "Flotilla checkout")
	dir := flag.String("dir", "", "state directory (default: a new directory under /tmp)")
	manager := flag.String("manager", "bin/flotilla-manager", "flotilla-manager binary")
	addonBin := flag.String("addon-bin", "", "directory of flotilla-estimator, flotilla-agent and kubectl-flotilla (default: bin/)")
	sample := flag.String("sample", "examples/fleet-web.yaml", "sample application applied to the hub once members are Ready; empty for none")
	exitAfterStart := flag.Bool("exit-after-start", false, "stop the fleet once the sample runs (a smoke test)")
	flag.Parse()

	if err := run(*root, *dir, *manager, *addonBin, *sample, *exitAfterStart); err != nil {
		fmt.Fprintln(os.Stderr, "localfleet:", err)
		os.Exit(1)
	}
}

func run(root, dir, manager, addonBin, sample string, exitAfterStart bool) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flotilla-dev-"); err != nil {
			return err
		}
	}
	logPath, closeLog, err := routeLogs(dir)
	if err != nil {
		return err
	}
	defer closeLog.Close()
	say("state and logs in %s (this process logs to %s)", dir, logPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if !filepath.IsAbs(manager) {
		manager = filepath.Join(root, manager)
	}
	started := time.Now()
	f, err := fleet.Start(ctx, fleet.Options{
		Dir:         dir,
		RepoRoot:    root,
		Members:     fleet.DefaultMembers(),
		AddonBinDir: addonBin,
		Manager:     &fleet.ManagerOptions{Binary: manager, Args: fleet.DefaultManagerArgs()},
		Progress:    terminal,
	})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping every process of the fleet")
		f.Stop()
	}()
	say("fleet up in %s", time.Since(started).Round(time.Second))
	say("waiting up to 3m for the CAPI Clusters to be Available (the test provider reports their control planes)")
	if err := f.WaitClustersAvailable(ctx, 3*time.Minute); err != nil {
		return err
	}
	say("CAPI Clusters Available; waiting up to 3m for flotilla-manager to enrol them as Ready members")
	if err := f.WaitMembersReady(ctx, 3*time.Minute); err != nil {
		return err
	}
	say("members enrolled and Ready after %s", time.Since(started).Round(time.Second))
	if sample != "" {
		if err := runSample(ctx, f, filepath.Join(root, sample)); err != nil {
			return err
		}
	}
	fmt.Fprintln(terminal, f.Describe())
	if exitAfterStart {
		return nil
	}
	say("running; press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

// runSample applies the sample to the hub and waits until its Deployment's
// replicas are Ready in the members, then prints the placement.
func runSample(ctx context.Context, f *fleet.Fleet, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	say("applying %s to the hub", file)
	if err := f.Apply(ctx, data); err != nil {
		return err
	}
	say("waiting up to 3m for fleet-web's replicas to be Ready in the members")
	placement, err := f.WaitWorkloadReady(ctx, "shop", "Deployment", "fleet-web", 3*time.Minute)
	if err != nil {
		return err
	}
	say("fleet-web runs on %s", placement)
	return nil
}
