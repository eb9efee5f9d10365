package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/e2e/fleet"
	"github.com/flotilla-io/flotilla/e2e/kindfleet"
)

// Backend is the fleet the specs run against, chosen by E2E_BACKEND.
// Specs that use only this interface can run on any backend; those labelled
// kindLabel do, on E2E_BACKEND=kind. Specs that use the local fleet's
// processes (theFleet) run on the local backend only.
type Backend interface {
	// Name is the value of E2E_BACKEND that selects it.
	Name() string
	// Start brings up a hub with Flotilla and its members, asserting with
	// Gomega; it Skips when the backend cannot run on this machine.
	Start(ctx context.Context)
	// Stop ends what Start started.
	Stop(ctx context.Context)
	// Hub is an admin client of the hub, the CAPI management cluster.
	Hub() client.Client
	// Members are the CAPI Clusters the backend created for members.
	Members() []BackendMember
	// StopControlPlane makes a member's control plane unavailable for good.
	StopControlPlane(ctx context.Context, member string) error
}

// BackendMember is a CAPI Cluster of a backend and an admin client of the
// cluster it describes.
type BackendMember struct {
	Namespace, Name string
	Client          client.Client
}

// kindLabel marks specs written against Backend that run on
// E2E_BACKEND=kind.
const kindLabel = "kind"

// theBackend is the suite's backend; theFleet is also set when it is the
// local one.
var theBackend Backend

func newBackend(name string) Backend {
	switch name {
	case "", "local":
		return &localBackend{}
	case "kind":
		return &kindBackend{}
	}
	Fail(fmt.Sprintf("E2E_BACKEND=%s is not a backend: use local (default) or kind", name))
	return nil
}

// Specs that use the local fleet's processes skip on other backends; specs
// written for kind skip on the local fleet, whose own specs cover the same
// ground and share its members (the kind specs break a member for good).
var _ = BeforeEach(func() {
	isKindSpec := false
	for _, l := range CurrentSpecReport().Labels() {
		isKindSpec = isKindSpec || l == kindLabel
	}
	switch {
	case theBackend == nil:
		Skip("no backend started")
	case theBackend.Name() == "local" && isKindSpec:
		Skip("written for E2E_BACKEND=kind (CAPD members); the local fleet's own specs cover enrolment, propagation and failover")
	case theBackend.Name() != "local" && !isKindSpec:
		Skip(fmt.Sprintf("uses the local fleet's processes; not run on E2E_BACKEND=%s", theBackend.Name()))
	}
})

// localBackend is the local fleet of package e2e/fleet.
type localBackend struct{}

func (*localBackend) Name() string { return "local" }

func (*localBackend) Start(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	dir := os.Getenv("E2E_FLEET_DIR")
	if dir == "" {
		dir = GinkgoT().TempDir()
	}
	manager := filepath.Join(repoRoot, "bin", "flotilla-manager")
	Expect(manager).To(BeAnExistingFile(), "build flotilla-manager first: make build")

	began := time.Now()
	var err error
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
}

func (*localBackend) Stop(context.Context) {
	if theFleet == nil {
		return
	}
	refusals := managerRefusals(theFleet)
	pids := theFleet.Processes()
	theFleet.Stop()
	for name, pid := range pids {
		Eventually(func() error { return syscall.Kill(pid, 0) }).WithTimeout(15*time.Second).
			Should(MatchError(syscall.ESRCH), "process %s (pid %d) still runs after the fleet stopped", name, pid)
	}
	Expect(refusals).To(BeEmpty(), "the hub refused requests of flotilla-manager (%s): the release's RBAC or admission policies do not give it what it does", fleet.ManagerUser())
}

func (*localBackend) Hub() client.Client { return theFleet.Hub.Client }

func (*localBackend) Members() []BackendMember {
	var out []BackendMember
	for _, m := range theFleet.Members() {
		out = append(out, BackendMember{Namespace: m.Spec.Namespace, Name: m.Name(), Client: m.Client})
	}
	return out
}

func (*localBackend) StopControlPlane(_ context.Context, member string) error {
	m := theFleet.Member(member)
	if m == nil {
		return fmt.Errorf("no member %s", member)
	}
	return m.StopAPIServer()
}

// kindBackend is a kind management cluster with CAPD members (package
// e2e/kindfleet). It needs Docker; without it the suite is skipped with the
// commands to run where Docker is.
type kindBackend struct {
	fleet *kindfleet.Fleet
}

// kindCommands are what a user with Docker runs for the kind e2e.
const kindCommands = "make test-e2e-kind   # = make images release-manifests, then E2E_BACKEND=kind go test ./e2e/ (needs Docker, and kind's node image and Cluster API's and CAPD's images on the machine or pullable: see docs/development.md)"

func (*kindBackend) Name() string { return "kind" }

func (k *kindBackend) Start(ctx context.Context) {
	if err := kindfleet.Available(ctx); err != nil {
		Skip(fmt.Sprintf("E2E_BACKEND=kind needs a Docker engine, and this machine has none (%v). Where Docker runs: %s", err, kindCommands))
	}
	ctx, cancel := context.WithTimeout(ctx, 40*time.Minute)
	defer cancel()
	opts := kindfleet.Options{
		RepoRoot:          repoRoot,
		NodeImage:         os.Getenv("E2E_KIND_NODE_IMAGE"),
		KubernetesVersion: os.Getenv("E2E_KUBERNETES_VERSION"),
		Keep:              os.Getenv("E2E_KIND_KEEP") != "",
		Progress:          GinkgoWriter,
	}
	began := time.Now()
	var err error
	k.fleet, err = kindfleet.Start(ctx, opts)
	var unavailable *kindfleet.UnavailableError
	if errors.As(err, &unavailable) {
		Skip(fmt.Sprintf("E2E_BACKEND=kind cannot run here: %v. To run it: %s", err, kindCommands))
	}
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("kind fleet start time", time.Since(began).Round(time.Second).String())
}

func (k *kindBackend) Stop(ctx context.Context) {
	if k.fleet != nil {
		k.fleet.Stop(ctx)
	}
}

func (k *kindBackend) Hub() client.Client { return k.fleet.Hub }

func (k *kindBackend) Members() []BackendMember {
	var out []BackendMember
	for _, m := range k.fleet.Members {
		out = append(out, BackendMember{Namespace: m.Namespace, Name: m.Spec.Name, Client: m.Client})
	}
	return out
}

func (k *kindBackend) StopControlPlane(ctx context.Context, member string) error {
	return k.fleet.StopControlPlane(ctx, member)
}

// backendMember returns the backend's member of that name.
func backendMember(name string) BackendMember {
	for _, m := range theBackend.Members() {
		if m.Name == name {
			return m
		}
	}
	Fail("no member " + name + " in the " + theBackend.Name() + " backend; members: " + memberNames())
	return BackendMember{}
}

func memberNames() string {
	var names []string
	for _, m := range theBackend.Members() {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}
