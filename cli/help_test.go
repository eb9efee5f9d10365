package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestEveryCommandHasExamplesInItsHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if !strings.HasPrefix(sub.Example, "  kubectl flotilla "+sub.Name()) {
				t.Errorf("%s: Example should start with %q, is %q", sub.CommandPath(), "  kubectl flotilla "+sub.Name(), sub.Example)
			}
			walk(sub)
		}
	}
	walk(NewRootCommand())
}

func TestClientVersionIsSetByTheBuildOrRecordedByGo(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v1.2.3"
	if got := clientVersion(); got != "v1.2.3" {
		t.Errorf("clientVersion() = %q, want the -X value v1.2.3", got)
	}
	Version = ""
	if got := clientVersion(); got == "" {
		t.Error("clientVersion() is empty without -X; want the module version or (devel)")
	}
}
