// Package kindfleet runs a Flotilla fleet the way a user does: a kind
// management cluster, Flotilla's images loaded into it, `clusterctl init
// --infrastructure docker --addon flotilla` with Flotilla from a local
// clusterctl repository (`make release-manifests`), and Cluster API Docker
// (CAPD) workload clusters generated from templates/cluster-template-flotilla.yaml,
// which enrol as members.
//
// It needs a Docker engine (kind and CAPD run clusters as containers) and
// network access (kind's node image, Cluster API's and CAPD's release
// manifests and images). Available reports why it cannot run; the e2e suite
// skips with that reason. It is the environment of E2E_BACKEND=kind.
package kindfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kind/pkg/apis/config/defaults"

	"github.com/flotilla-io/flotilla/e2e/kindfleet/offline"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

// Options configure a kind fleet. Zero values take the defaults below.
type Options struct {
	// RepoRoot is the Flotilla checkout: templates/ and the output of
	// `make images release-manifests` in out/.
	RepoRoot string
	// Dir holds kubeconfigs and the clusterctl configuration.
	Dir string
	// ClusterName is the kind management cluster's name.
	ClusterName string
	// NodeImage is the kind node image of the management cluster; kind's
	// default when empty.
	NodeImage string
	// KubernetesVersion of the workload clusters (a kindest/node tag must
	// exist for it); the management cluster's when empty.
	KubernetesVersion string
	// Images are image archives to load into the management cluster;
	// out/images/*.tar when empty.
	Images []string
	// Repository is the clusterctl local repository holding
	// addon-flotilla/<Version>/; out/repository when empty.
	Repository string
	// Version of Flotilla in the repository; its only version when empty.
	Version string
	// Namespace of the workload clusters' CAPI objects.
	Namespace string
	// Members are the workload clusters to create.
	Members []MemberSpec
	// Offline is the offline.json of `go run ./hack/kindimage -providers DIR`
	// (E2E_KIND_OFFLINE when empty): Cluster API's providers, CAPD and a
	// cert-manager stand-in built here, for a machine without a registry.
	// Without it clusterctl takes them from their releases.
	Offline string
	// Keep leaves the clusters running after Stop, for debugging.
	Keep bool
	// Progress receives one line per step; nil for silence.
	Progress io.Writer

	ownDir bool // Dir was made by withDefaults: Stop removes it
}

// MemberSpec is a CAPD workload cluster made from the flotilla template.
type MemberSpec struct {
	Name, Region, Zone string
}

// DefaultMembers are three workload clusters in different zones: the kind
// specs divide a Deployment over them, delete one's Cluster and stop
// another's control plane, and the replicas end on the third.
func DefaultMembers() []MemberSpec {
	return []MemberSpec{
		{Name: "kind-member1", Region: "local", Zone: "local-a"},
		{Name: "kind-member2", Region: "local", Zone: "local-b"},
		{Name: "kind-member3", Region: "local", Zone: "local-c"},
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.RepoRoot == "" {
		return o, errors.New("kindfleet: RepoRoot is required")
	}
	if o.ClusterName == "" {
		o.ClusterName = "flotilla-e2e"
	}
	if o.Offline == "" {
		o.Offline = os.Getenv("E2E_KIND_OFFLINE")
	}
	if o.Offline != "" {
		off, err := offline.Read(o.Offline)
		if err != nil {
			return o, err
		}
		if o.NodeImage == "" {
			o.NodeImage = off.NodeImage
		}
	}
	if o.NodeImage == "" {
		o.NodeImage = defaults.Image
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = imageVersion(o.NodeImage)
	}
	if o.Namespace == "" {
		o.Namespace = "fleet"
	}
	if len(o.Members) == 0 {
		o.Members = DefaultMembers()
	}
	if o.Repository == "" {
		o.Repository = filepath.Join(o.RepoRoot, "out", "repository")
	}
	if len(o.Images) == 0 {
		images, err := filepath.Glob(filepath.Join(o.RepoRoot, "out", "images", "*.tar"))
		if err != nil {
			return o, err
		}
		o.Images = images
	}
	if len(o.Images) == 0 {
		return o, fmt.Errorf("no image archives in %s: run `make images`", filepath.Join(o.RepoRoot, "out", "images"))
	}
	if o.Version == "" {
		versions, err := os.ReadDir(filepath.Join(o.Repository, "addon-flotilla"))
		if err != nil || len(versions) != 1 {
			return o, fmt.Errorf("want exactly one version of addon-flotilla in %s (run `make release-manifests`): %v", o.Repository, err)
		}
		o.Version = versions[0].Name()
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "flotilla-kind-")
		if err != nil {
			return o, err
		}
		o.Dir, o.ownDir = dir, true
	}
	return o, nil
}

// imageVersion is the tag of a node image: kindest/node:v1.37.0@sha256:… → v1.37.0.
func imageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@")
	return image[strings.LastIndex(image, ":")+1:]
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "kindfleet: "+format+"\n", args...)
	}
}

// Fleet is a running kind management cluster with Flotilla and its CAPD
// members.
type Fleet struct {
	opts    Options
	offline *offline.Assets
	// Hub is an admin client of the management cluster.
	Hub client.Client
	// HubKubeconfig is the path of its admin kubeconfig.
	HubKubeconfig string
	// Members are the workload clusters, in the order of Options.Members.
	Members []*Member
}

// Member is a CAPD workload cluster.
type Member struct {
	Spec      MemberSpec
	Namespace string
	// Client is an admin client of the workload cluster, from Cluster API's
	// <cluster>-kubeconfig Secret.
	Client client.Client
}

// Start creates the management cluster, installs Cluster API, CAPD and
// Flotilla, and creates the members; it returns when every member's CAPI
// Cluster is Available. On error, what was created is removed.
func Start(ctx context.Context, opts Options) (f *Fleet, err error) {
	if err := Available(ctx); err != nil {
		return nil, err
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	if err := EnsureImage(ctx, opts.NodeImage); err != nil {
		return nil, err
	}
	f = &Fleet{opts: opts, HubKubeconfig: filepath.Join(opts.Dir, "hub.kubeconfig")}
	if opts.Offline != "" {
		if f.offline, err = offline.Read(opts.Offline); err != nil {
			return nil, err
		}
		opts.Images = append(opts.Images, f.offline.Images...)
		f.opts = opts
	}
	defer func() {
		if err != nil {
			f.Stop(context.WithoutCancel(ctx))
			f = nil
		}
	}()
	if err := f.createManagementCluster(); err != nil {
		return f, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.HubKubeconfig)
	if err != nil {
		return f, err
	}
	if f.Hub, err = client.New(cfg, client.Options{Scheme: hubscheme.New()}); err != nil {
		return f, err
	}
	if err := f.loadImages(); err != nil {
		return f, err
	}
	if f.offline != nil {
		if err := f.installCertManager(ctx); err != nil {
			return f, err
		}
	}
	if err := f.initProviders(ctx); err != nil {
		return f, err
	}
	if err := f.installCNI(ctx); err != nil {
		return f, err
	}
	for _, spec := range opts.Members {
		if err := f.createMember(ctx, spec); err != nil {
			return f, err
		}
	}
	for _, m := range f.Members {
		if err := f.waitMember(ctx, m, 15*time.Minute); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Member returns the member of that name, or nil.
func (f *Fleet) Member(name string) *Member {
	for _, m := range f.Members {
		if m.Spec.Name == name {
			return m
		}
	}
	return nil
}

// Stop deletes the members' CAPI Clusters (CAPD removes their containers),
// then the management cluster. With Options.Keep it leaves both.
func (f *Fleet) Stop(ctx context.Context) {
	if f.opts.Keep {
		f.opts.progress("keeping the clusters (E2E_KIND_KEEP): kubeconfig %s", f.HubKubeconfig)
		return
	}
	if f.Hub != nil {
		f.deleteMembers(ctx, 5*time.Minute)
	}
	f.deleteManagementCluster()
	if f.opts.ownDir {
		_ = os.RemoveAll(f.opts.Dir)
	}
}
