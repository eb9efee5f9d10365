// Command kubectl-flotilla is Flotilla's kubectl plugin (package cli).
package main

import (
	"fmt"
	"os"

	"github.com/flotilla-io/flotilla/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
