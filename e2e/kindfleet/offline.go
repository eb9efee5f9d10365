package kindfleet

import (
	"bytes"
	"context"
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
