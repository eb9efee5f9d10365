// Command releasemanifests writes Flotilla's clusterctl release artifacts
// (`make release-manifests`): out/addon-components.yaml, out/metadata.yaml,
// the cluster templates, and the same files as a clusterctl local repository
// under out/repository/addon-flotilla/<version>/.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/flotilla-io/flotilla/clusterctl/release"
)

func main() {
	var opts release.Options
	out := flag.String("out", "out", "folder to write the artifacts into")
	flag.StringVar(&opts.RepoRoot, "repo", ".", "Flotilla checkout")
	flag.StringVar(&opts.Registry, "registry", "ghcr.io/flotilla-io", "registry and path of the images")
	flag.StringVar(&opts.Tag, "tag", "dev", "tag of the images")
	flag.StringVar(&opts.Version, "version", "", "release version, the local repository's folder (default: nextVersion of clusterctl/clusterctl-settings.json)")
	flag.Parse()

	a, err := release.Write(*out, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release-manifests:", err)
		os.Exit(1)
	}
	fmt.Printf("release-manifests: wrote %s and %s (images %s/*:%s)\n", a.Components, a.Metadata, opts.Registry, opts.Tag)
	fmt.Printf("release-manifests: local repository for clusterctl: file://%s\n", a.RepositoryComponents)
}
