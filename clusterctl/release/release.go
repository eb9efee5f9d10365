// Package release builds Flotilla's clusterctl provider artifacts from the
// checkout: the components file of the AddonProvider "flotilla", built with
// kustomize from config/default, clusterctl's metadata.yaml and the cluster
// templates, laid out as a release's assets and as a clusterctl local
// repository (file:// provider URLs).
package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// What clusterctl knows Flotilla by.
const (
	// ProviderName is the name in `clusterctl init --addon flotilla`.
	ProviderName = "flotilla"
	// ProviderLabel is clusterctl's manifest label of an AddonProvider
	// named flotilla: the value of cluster.x-k8s.io/provider on every
	// object, and the folder of a local repository.
	ProviderLabel = "addon-flotilla"
	// ComponentsFile is the release asset clusterctl installs.
	ComponentsFile = "addon-components.yaml"
	// MetadataFile maps release series to the Cluster API contract.
	MetadataFile = "metadata.yaml"
	// Namespace is where the components go unless clusterctl is told
	// otherwise (--target-namespace).
	Namespace = "flotilla-system"
	// RepositoryDir is the local repository's folder under the output
	// folder: <out>/repository/addon-flotilla/<version>/.
	RepositoryDir = "repository"
)

// Options say which release to build.
type Options struct {
	// RepoRoot is the checkout holding config/, metadata.yaml, templates/
	// and clusterctl/.
	RepoRoot string
	// Registry prefixes the image names, e.g. ghcr.io/flotilla-io.
	Registry string
	// Tag is the images' tag, e.g. v0.1.0 or dev.
	Tag string
	// Version is the release's semantic version (v0.1.0): the local
	// repository's folder. Empty: clusterctl/clusterctl-settings.json's
	// nextVersion.
	Version string
}

// Artifacts are the files Write wrote.
type Artifacts struct {
	// Components, Metadata and Templates are the release's assets.
	Components, Metadata string
	Templates            []string
	// RepositoryComponents is the components file inside the local
	// repository: file://<RepositoryComponents> is the provider's URL.
	RepositoryComponents string
	Version              string
}

// Images are the defaults of the image variables in the components, for a
// registry and tag. Keys are clusterctl variables of config/manager.
func Images(registry, tag string) map[string]string {
	return map[string]string{
		"FLOTILLA_IMAGE":           registry + "/flotilla-manager:" + tag,
		"FLOTILLA_ESTIMATOR_IMAGE": registry + "/flotilla-estimator:" + tag,
		"FLOTILLA_AGENT_IMAGE":     registry + "/flotilla-agent:" + tag,
	}
}

func (o Options) validate() error {
	var missing []string
	for name, v := range map[string]string{"RepoRoot": o.RepoRoot, "Registry": o.Registry, "Tag": o.Tag} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("release options %s are empty", strings.Join(missing, ", "))
	}
	if strings.HasSuffix(o.Registry, "/") {
		return fmt.Errorf("registry %q ends with /", o.Registry)
	}
	return nil
}

// Components builds addon-components.yaml: kustomize's build of
// config/default with the defaults of the image and version variables set
// to this release's.
func Components(opts Options) ([]byte, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.RepoRoot, "config", "default")
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	built, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	defaults := Images(opts.Registry, opts.Tag)
	defaults["FLOTILLA_VERSION"] = opts.Tag
	return SetDefaults(built, defaults)
}

// SetDefaults rewrites the default of each clusterctl variable
// `${NAME:=default}` named in defaults. A name that does not occur is an
// error: config/ and the release would disagree silently otherwise.
func SetDefaults(yaml []byte, defaults map[string]string) ([]byte, error) {
	names := make([]string, 0, len(defaults))
	for n := range defaults {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		re := regexp.MustCompile(`\$\{` + regexp.QuoteMeta(name) + `:=[^}]*\}`)
		if !re.Match(yaml) {
			return nil, fmt.Errorf("the components have no variable ${%s:=...} to set the release default of", name)
		}
		value := "${" + name + ":=" + defaults[name] + "}"
		yaml = re.ReplaceAllLiteral(yaml, []byte(value))
	}
	return yaml, nil
}

// Write writes the release's assets into out (addon-components.yaml,
// metadata.yaml, cluster-template-*.yaml) and the same files as a
// clusterctl local repository under out/repository/addon-flotilla/<version>/.
func Write(out string, opts Options) (Artifacts, error) {
	components, err := Components(opts)
	if err != nil {
		return Artifacts{}, err
	}
	if opts.Version == "" {
		if opts.Version, err = NextVersion(opts.RepoRoot); err != nil {
			return Artifacts{}, err
		}
	}
	metadata, err := os.ReadFile(filepath.Join(opts.RepoRoot, MetadataFile))
	if err != nil {
		return Artifacts{}, fmt.Errorf("clusterctl metadata: %w", err)
	}
	templates, err := filepath.Glob(filepath.Join(opts.RepoRoot, "templates", "cluster-template*.yaml"))
	if err != nil {
		return Artifacts{}, err
	}
	files := map[string][]byte{ComponentsFile: components, MetadataFile: metadata}
	for _, t := range templates {
		data, err := os.ReadFile(t)
		if err != nil {
			return Artifacts{}, err
		}
		files[filepath.Base(t)] = data
	}

	versionDir := filepath.Join(out, RepositoryDir, ProviderLabel, opts.Version)
	// A stale file of an earlier build must not stay in the repository.
	if err := os.RemoveAll(versionDir); err != nil {
		return Artifacts{}, err
	}
	for _, dir := range []string{out, versionDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Artifacts{}, err
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return Artifacts{}, err
			}
		}
	}
	a := Artifacts{
		Components:           filepath.Join(out, ComponentsFile),
		Metadata:             filepath.Join(out, MetadataFile),
		RepositoryComponents: filepath.Join(versionDir, ComponentsFile),
		Version:              opts.Version,
	}
	for _, t := range templates {
		a.Templates = append(a.Templates, filepath.Join(out, filepath.Base(t)))
	}
	return a, nil
}

// Settings is clusterctl/clusterctl-settings.json, which Cluster API's
// cmd/clusterctl/hack/create-local-repository.py reads from each provider's
// checkout.
type Settings struct {
	Name   string `json:"name"`
	Config struct {
		ComponentsFile string `json:"componentsFile"`
		NextVersion    string `json:"nextVersion"`
	} `json:"config"`
}

// ReadSettings reads clusterctl/clusterctl-settings.json of the checkout.
func ReadSettings(repoRoot string) (Settings, error) {
	var s Settings
	path := filepath.Join(repoRoot, "clusterctl", "clusterctl-settings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// NextVersion is the version the next release gets: nextVersion of
// clusterctl/clusterctl-settings.json.
func NextVersion(repoRoot string) (string, error) {
	s, err := ReadSettings(repoRoot)
	if err != nil {
		return "", err
	}
	if s.Config.NextVersion == "" {
		return "", errors.New("clusterctl/clusterctl-settings.json has no config.nextVersion")
	}
	return s.Config.NextVersion, nil
}
