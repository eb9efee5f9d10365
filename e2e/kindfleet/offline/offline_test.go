package offline

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestWhatHackKindimageWritesKindfleetReadsBack(t *testing.T) {
	want := &Assets{
		CAPIVersion: "v1.14.2", Repository: "/out/repository", CertManager: "/out/cert-issuer.yaml",
		Providers:                   []Provider{{Name: "docker", Type: "InfrastructureProvider", URL: "file:///out/repository/infrastructure-docker/v1.14.2/infrastructure-components.yaml"}},
		Images:                      []string{"/out/images/capd.tar"},
		LoadBalancerImageRepository: "flotilla-kind", LoadBalancerImageTag: "bookworm", NodeImage: "flotilla-kind/node:v1.36.3",
	}
	path := filepath.Join(t.TempDir(), "offline.json")
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing offline.json read without an error")
	}
}
