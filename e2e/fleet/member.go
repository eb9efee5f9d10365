package fleet

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubernetesVersion is the version of the fleet's Kubernetes binaries.
const KubernetesVersion = "v1.36.3"

// NodePool is a set of identical fake Nodes of a member.
type NodePool struct {
	// Name prefixes the Nodes' names: <member>-<pool>-<i>.
	Name   string
	Count  int
	CPU    string // e.g. "4"
	Memory string // e.g. "16Gi"
	Pods   int
	Labels map[string]string
	Taints []corev1.Taint
}

// MemberSpec describes a member cluster and its CAPI Cluster.
type MemberSpec struct {
	// Name of the CAPI Cluster.
	Name string
	// Namespace of the CAPI Cluster; "default" when empty.
	Namespace string
	// Labels of the CAPI Cluster (region, zone, provider, enrolment opt-in).
	Labels map[string]string
	// Annotations of the CAPI Cluster, e.g. flotilla.io/sync-mode: Pull.
	Annotations map[string]string
	// NodePools of the member; one pool of 2 nodes × 4 CPU when empty.
	NodePools []NodePool
}

func (s MemberSpec) withDefaults() MemberSpec {
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	if len(s.NodePools) == 0 {
		s.NodePools = []NodePool{{Name: "worker", Count: 2, CPU: "4", Memory: "16Gi", Pods: 110}}
	}
	return s
}

// Member is a member cluster running as local processes.
type Member struct {
	Spec MemberSpec

	cp    *controlPlane
	kcm   *process
	sched *process
	kwok  *process

	// addons runs the Flotilla add-ons installed into the member.
	addons *addons

	// Client is an admin client of the member.
	Client client.Client
}

func newMember(spec MemberSpec, dir, bin string) *Member {
	spec = spec.withDefaults()
	cp := newControlPlane(spec.Name, filepath.Join(dir, "members", spec.Namespace+"-"+spec.Name), bin)
	return &Member{Spec: spec, cp: cp}
}

// Name is the CAPI Cluster's name.
func (m *Member) Name() string { return m.Spec.Name }

// Kubeconfig is the path of an admin kubeconfig of the member.
func (m *Member) Kubeconfig() string { return m.cp.Kubeconfig }

// RESTConfig is an admin client configuration of the member.
func (m *Member) RESTConfig() *rest.Config { return m.cp.RESTConfig() }

// Server is the member's apiserver URL.
func (m *Member) Server() string { return m.cp.Server() }

// AuditLog is the path of the member apiserver's audit log.
func (m *Member) AuditLog() string { return m.cp.AuditLog() }

// Dir holds the member's state and logs.
func (m *Member) Dir() string { return m.cp.dir }

// ProviderID is the providerID of one of the member's Nodes, shared by the
// kwok Node and the CAPI Machine that stands for it.
func (m *Member) ProviderID(node string) string {
	return "kwok://" + m.Spec.Namespace + "/" + m.Spec.Name + "/" + node
}

// NodeNames lists the member's Nodes by pool order.
func (m *Member) NodeNames() []string {
	var names []string
	for _, p := range m.Spec.NodePools {
		for i := range p.Count {
			names = append(names, fmt.Sprintf("%s-%s-%d", m.Spec.Name, p.Name, i))
		}
	}
	return names
}

func (m *Member) start(ctx context.Context) error {
	if err := m.cp.start(ctx); err != nil {
		return fmt.Errorf("member %s: %w", m.Spec.Name, err)
	}
	c, err := client.New(m.cp.RESTConfig(), client.Options{})
	if err != nil {
		return err
	}
	m.Client = c
	m.kcm, m.sched, m.kwok = controllerManager(m.cp), scheduler(m.cp), kwok(m.cp)
	for _, p := range []*process{m.kcm, m.sched, m.kwok} {
		if err := p.start(); err != nil {
			return fmt.Errorf("member %s: %w", m.Spec.Name, err)
		}
	}
	if err := m.createNodes(ctx); err != nil {
		return fmt.Errorf("member %s: %w", m.Spec.Name, err)
	}
	if err := waitFor(ctx, "nodes of member "+m.Spec.Name+" Ready", 2*time.Minute, m.allNodesReady, m.kwok, m.kcm); err != nil {
		return err
	}
	// Pods are admitted only once kube-controller-manager has created the
	// namespace's default ServiceAccount: a member is ready for workloads then.
	return waitFor(ctx, "default ServiceAccount of member "+m.Spec.Name, time.Minute, func(ctx context.Context) error {
		return m.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
	}, m.kcm)
}

func (m *Member) createNodes(ctx context.Context) error {
	for _, pool := range m.Spec.NodePools {
		for i := range pool.Count {
			name := fmt.Sprintf("%s-%s-%d", m.Spec.Name, pool.Name, i)
			labels := map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"type":                   "kwok",
				"flotilla.io/node-pool":  pool.Name,
			}
			for k, v := range pool.Labels {
				labels[k] = v
			}
			capacity := corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(pool.CPU),
				corev1.ResourceMemory: resource.MustParse(pool.Memory),
				corev1.ResourcePods:   *resource.NewQuantity(int64(pool.Pods), resource.DecimalSI),
			}
			node := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        name,
					Labels:      labels,
					Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				},
				Spec:   corev1.NodeSpec{ProviderID: m.ProviderID(name), Taints: pool.Taints},
				Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
			}
			if err := m.Client.Create(ctx, node); client.IgnoreAlreadyExists(err) != nil {
				return fmt.Errorf("create node %s: %w", name, err)
			}
		}
	}
	return nil
}

func (m *Member) allNodesReady(ctx context.Context) error {
	for _, name := range m.NodeNames() {
		node := &corev1.Node{}
		if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		if !nodeReady(node) {
			return fmt.Errorf("node %s is not Ready", name)
		}
	}
	return nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// healthy returns nil while the member's apiserver answers /readyz.
func (m *Member) healthy(ctx context.Context) error {
	httpClient, err := rest.HTTPClientFor(m.cp.config)
	if err != nil {
		return err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.cp.Server()+"/readyz", nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

func (m *Member) kubeconfigBytes() ([]byte, error) { return os.ReadFile(m.cp.Kubeconfig) }

func (m *Member) stop() {
	if m.addons != nil {
		m.addons.stop()
	}
	for _, p := range []*process{m.kwok, m.sched, m.kcm} {
		if p != nil {
			_ = p.stop(5 * time.Second)
		}
	}
	m.cp.stop()
}
