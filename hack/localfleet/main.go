// Command localfleet runs the embedded default fleet of `make dev`: a hub and
// three member clusters as local processes, with Cluster API managing the
// members and flotilla-manager on the hub. It prints how to reach each
// cluster and runs until interrupted, then stops every process it started.
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
	exitAfterStart := flag.Bool("exit-after-start", false, "stop the fleet once it is up (a smoke test)")
	flag.Parse()

	if err := run(*root, *dir, *manager, *exitAfterStart); err != nil {
		fmt.Fprintln(os.Stderr, "localfleet:", err)
		os.Exit(1)
	}
}

func run(root, dir, manager string, exitAfterStart bool) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flotilla-dev-"); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	f, err := fleet.Start(ctx, fleet.Options{
		Dir:      dir,
		RepoRoot: root,
		Members:  fleet.DefaultMembers(),
		Manager:  &fleet.ManagerOptions{Binary: filepath.Join(root, manager), Args: fleet.DefaultManagerArgs()},
		Progress: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("localfleet: stopping every process of the fleet")
		f.Stop()
	}()
	fmt.Printf("localfleet: fleet up in %s\n", time.Since(started).Round(time.Second))
	if err := f.WaitClustersAvailable(ctx, 3*time.Minute); err != nil {
		return err
	}
	fmt.Println(f.Describe())
	if exitAfterStart {
		return nil
	}
	fmt.Println("localfleet: running; press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
