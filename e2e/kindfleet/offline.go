package kindfleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Offline is what `go run ./hack/kindimage -providers DIR` writes to
// DIR/offline.json: everything a management cluster needs when no registry
// can be reached. Keep in step with hack/kindimage's Offline.
type Offline struct {
	CAPIVersion                 string            `json:"capiVersion"`
	Repository                  string            `json:"repository"`
	Providers                   []OfflineProvider `json:"providers"`
	Images                      []string          `json:"images"`
	CertManager                 string            `json:"certManager"`
	LoadBalancerImageRepository string            `json:"loadBalancerImageRepository"`
	LoadBalancerImageTag        string            `json:"loadBalancerImageTag"`
	NodeImage                   string            `json:"nodeImage"`
}

// OfflineProvider is one entry of clusterctl's providers list.
type OfflineProvider struct {
	Name string `json:"name"`
	Type string `json:"type"`
	URL  string `json:"url"`
}

// ReadOffline reads an offline.json.
func ReadOffline(path string) (*Offline, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o := &Offline{}
	if err := json.Unmarshal(b, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// dockerSocket is the engine's unix socket as DOCKER_HOST names it (the
// privileged-rewriting proxy of hack/dockerproxy, where one is needed);
// CAPD in the management cluster reaches the engine through it.
func dockerSocket() string {
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		return strings.TrimPrefix(h, "unix://")
	}
	return "/var/run/docker.sock"
}

// installCertManager applies the cert-manager stand-in's manifest and waits
// for its Deployment: clusterctl then finds the cert-manager.io API ready
// and installs none.
func (f *Fleet) installCertManager(ctx context.Context) error {
	raw, err := os.ReadFile(f.offline.CertManager)
	if err != nil {
		return err
	}
	f.opts.progress("installing the cert-manager stand-in (%s)", f.offline.CertManager)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return err
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := f.Hub.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := f.Hub.Get(ctx, client.ObjectKey{Namespace: "cert-manager", Name: "cert-issuer"}, d); err != nil {
			return false, nil
		}
		return d.Status.AvailableReplicas > 0, nil
	})
}
