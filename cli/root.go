// Package cli implements kubectl-flotilla: list members, explain a
// placement, and preview what a policy would do, against the hub.
//
//	kubectl flotilla members
//	kubectl flotilla explain deployment/web -n shop
//	kubectl flotilla preview -f web.yaml -f policy.yaml
//	kubectl flotilla quota [-n tenant]
//	kubectl flotilla version
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

// globalFlags are kubectl's connection flags.
type globalFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

// NewRootCommand returns the kubectl-flotilla command and its subcommands.
func NewRootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "kubectl-flotilla",
		Short: "Inspect and steer a Flotilla fleet from its hub",
		Example: `  kubectl flotilla members
  kubectl flotilla explain deployment/fleet-web -n shop
  kubectl flotilla preview -f fleet-web.yaml -f fleet-web-policy.yaml
  kubectl flotilla drain member2
  kubectl flotilla version`,
		// Usage lines read as the user types it, as a kubectl plugin.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl flotilla"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.kubeconfig, "kubeconfig", "", "Path to the hub's kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&g.context, "context", "", "Kubeconfig context of the hub")
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", "", "Namespace of the template (default: the context's namespace)")
	root.AddCommand(newMembersCommand(g), newExplainCommand(g), newPreviewCommand(g))
	root.AddCommand(newQuotaCommand(g))
	root.AddCommand(newTaintCommands(g)...)
	root.AddCommand(newVersionCommand(g))
	return root
}

// hubClient connects to the hub the way kubectl does.
func (g *globalFlags) hubClient() (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if g.kubeconfig != "" {
		rules.ExplicitPath = g.kubeconfig
	}
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: g.context})
	rest, err := cfg.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("hub kubeconfig: %w", err)
	}
	ns := g.namespace
	if ns == "" {
		if ns, _, err = cfg.Namespace(); err != nil {
			return nil, "", err
		}
	}
	c, err := client.New(rest, client.Options{Scheme: hubscheme.New()})
	if err != nil {
		return nil, "", fmt.Errorf("connect to the hub: %w", err)
	}
	return c, ns, nil
}
