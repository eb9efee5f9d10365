package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Version is kubectl-flotilla's own version. A release build sets it with
// -ldflags "-X github.com/flotilla-io/flotilla/cli.Version=v1.2.3"; otherwise
// it is the module version Go recorded in the binary (`go install ...@v1.2.3`
// records the tag; a build from a clone records a pseudo-version of the
// commit, +dirty when the tree had changes).
var Version = ""

// managerLabel selects flotilla-manager's Deployment (config/manager), in
// any namespace, else in managerNamespace, where clusterctl installs it.
const (
	managerLabel     = "app.kubernetes.io/name"
	managerNamespace = "flotilla-system"
)

func clientVersion() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	// Built without module version (go run, or VCS stamping off): the commit, if recorded.
	revision, modified := "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if revision == "" {
		return "(devel)"
	}
	return "(devel) commit " + revision[:min(12, len(revision))] + modified
}

func newVersionCommand(g *globalFlags) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print kubectl-flotilla's version and, from the hub, flotilla-manager's",
		Long: `Print kubectl-flotilla's version and flotilla-manager's, read from its Deployment on the hub
(label app.kubernetes.io/name=flotilla-manager, any namespace; clusterctl installs it in flotilla-system):
the --flotilla-version the manager runs with, which is also the version its add-ons carry in members,
else the tag of its image. A manager that runs as a process (make dev) has no Deployment: its version
is then unknown to the hub.`,
		Example: `  kubectl flotilla version
  kubectl flotilla version --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Client version:  %s\n", clientVersion())
			if clientOnly {
				return nil
			}
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			return printManagerVersion(cmd.Context(), out, c)
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print only kubectl-flotilla's version; do not contact the hub")
	return cmd
}

func printManagerVersion(ctx context.Context, out io.Writer, c client.Client) error {
	if ctx == nil {
		ctx = context.Background()
	}
	list := &appsv1.DeploymentList{}
	selector := client.MatchingLabels{managerLabel: "flotilla-manager"}
	err := c.List(ctx, list, selector)
	if apierrors.IsForbidden(err) {
		// A tenant may not list Deployments everywhere: clusterctl's namespace may still be readable.
		err = c.List(ctx, list, selector, client.InNamespace(managerNamespace))
	}
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(out, "Manager version: unknown (your hub credentials may not list Deployments in %s, where clusterctl installs flotilla-manager)\n", managerNamespace)
		return nil
	}
	if err != nil {
		return fmt.Errorf("find flotilla-manager's Deployment on the hub: %w", err)
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(out, "Manager version: unknown (no Deployment labelled "+managerLabel+"=flotilla-manager on the hub; make dev runs the manager as a process)")
		return nil
	}
	for i := range list.Items {
		d := &list.Items[i]
		v, from := managerVersion(d)
		fmt.Fprintf(out, "Manager version: %s (%s, Deployment %s/%s)\n", v, from, d.Namespace, d.Name)
	}
	return nil
}

// managerVersion reads the version a flotilla-manager Deployment runs: its
// --flotilla-version flag, else its image's tag.
func managerVersion(d *appsv1.Deployment) (version, from string) {
	containers := d.Spec.Template.Spec.Containers
	for _, c := range containers {
		for i, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--flotilla-version="); ok {
				return v, "--flotilla-version"
			}
			if a == "--flotilla-version" && i+1 < len(c.Args) {
				return c.Args[i+1], "--flotilla-version"
			}
		}
	}
	for _, c := range containers {
		if c.Name != "manager" && len(containers) > 1 {
			continue
		}
		image := c.Image
		if at := strings.Index(image, "@"); at >= 0 {
			return image[at+1:], "image digest"
		}
		if colon := strings.LastIndex(image, ":"); colon > strings.LastIndex(image, "/") {
			return image[colon+1:], "image tag"
		}
		return "latest", "image without a tag"
	}
	return "unknown", "no container"
}
