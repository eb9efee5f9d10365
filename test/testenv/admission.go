package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallAdmissionPolicies creates the admission policies and bindings of
// the named files of config/admission, as the release does, and returns
// what it created.
func InstallAdmissionPolicies(ctx context.Context, c client.Client, files ...string) ([]client.Object, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	var created []client.Object
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(root, "config", "admission", f))
		if err != nil {
			return created, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return created, fmt.Errorf("decode %s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Create(ctx, u); err != nil {
				return created, fmt.Errorf("install %s %s: %w", u.GetKind(), u.GetName(), err)
			}
			created = append(created, u)
		}
	}
	return created, nil
}
