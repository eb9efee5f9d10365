package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const testName = "flotilla-test"

var (
	buildOnce sync.Once
	buildDir  string
	builtBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// staticBinary compiles a tiny program as `make images` compiles
// Flotilla's binaries: CGO_ENABLED=0, -trimpath, linux/amd64.
func staticBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var err error
		if buildDir, err = os.MkdirTemp("", "imagebuild-test-"); err != nil {
			buildErr = err
			return
		}
		src := filepath.Join(buildDir, "main.go")
		if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"flotilla\") }\n"), 0o644); err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(buildDir, testName)
		cmd := exec.Command("go", "build", "-trimpath", "-o", builtBin, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build the test binary: %v", buildErr)
	}
	return builtBin
}

func buildArchive(t *testing.T, bin string, created time.Time) (string, v1.Image, name.Tag) {
	t.Helper()
	ref, err := name.NewTag("ghcr.io/flotilla-io/" + testName + ":v9.8.7")
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(Spec{Name: testName, Binary: bin, Labels: Labels(testName, "v9.8.7", "abc123"), Created: created})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), testName+".tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(f, ref, img, created); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, img, ref
}

func TestArchiveRunsTheBinaryAsNonRootFromAnEmptyBase(t *testing.T) {
	bin := staticBinary(t)
	path, _, ref := buildArchive(t, bin, time.Unix(0, 0))

	// Read back the way `docker load` does: through manifest.json.
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		t.Fatalf("the archive does not load as a docker archive: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/"+testName {
		t.Errorf("entrypoint = %q, want [/%s]", got, testName)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532", cfg.Config.User)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform = %s/%s, want linux/amd64", cfg.OS, cfg.Architecture)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title":    testName,
		"org.opencontainers.image.version":  "v9.8.7",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source":   Source,
	} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want exactly one (the binary on an empty base)", len(layers))
	}
	files := layerFiles(t, layers[0])
	if len(files) != 1 {
		t.Errorf("layer holds %v, want only %s", names(files), testName)
	}
	f, ok := files[testName]
	if !ok {
		t.Fatalf("layer holds %v, not %s", names(files), testName)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.data, want) {
		t.Errorf("%s in the layer differs from the binary (%d bytes, want %d)", testName, len(f.data), len(want))
	}
	if f.hdr.Mode != 0o755 || f.hdr.Uid != 0 || f.hdr.Gid != 0 {
		t.Errorf("%s has mode %o owner %d:%d, want 755 root:root", testName, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid)
	}
}

func TestArchiveIsAnOCILayoutNamingTheImage(t *testing.T) {
	path, built, ref := buildArchive(t, staticBinary(t), time.Unix(0, 0))
	dir := t.TempDir()
	untar(t, path, dir)

	index, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("the archive is not an OCI image layout: %v", err)
	}
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	if got := d.Annotations["io.containerd.image.name"]; got != ref.Name() {
		t.Errorf("io.containerd.image.name = %q, want %q (the name kind and containerd import it as)", got, ref.Name())
	}
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != "v9.8.7" {
		t.Errorf("org.opencontainers.image.ref.name = %q, want the tag v9.8.7", got)
	}
	want, err := built.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.Digest != want {
		t.Errorf("index.json points at %s, want the built image %s", d.Digest, want)
	}
	img, err := index.Image(d.Digest)
	if err != nil {
		t.Fatalf("the manifest's blobs are not all in the layout: %v", err)
	}
	if mt, _ := img.MediaType(); !strings.Contains(string(mt), "oci") {
		t.Errorf("manifest media type %s, want an OCI one", mt)
	}
}

func TestSameBinaryGivesTheSameImage(t *testing.T) {
	bin := staticBinary(t)
	a, _, _ := buildArchive(t, bin, time.Unix(1700000000, 0))
	b, _, _ := buildArchive(t, bin, time.Unix(1700000000, 0))
	da, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(da, db) {
		t.Error("two builds of the same binary at the same time differ: the archive is not reproducible")
	}
}

func TestRefusesBinariesThatCannotRunOnAnEmptyLinuxAMD64Base(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckStaticLinuxAMD64(script); err == nil || !strings.Contains(err.Error(), "not a linux executable") {
		t.Errorf("a shell script: err = %v, want 'not a linux executable'", err)
	}

	// The same static binary, its ELF header saying arm64.
	data, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint16(data[18:20], uint16(elf.EM_AARCH64))
	arm := filepath.Join(dir, "arm64")
	if err := os.WriteFile(arm, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckStaticLinuxAMD64(arm); err == nil || !strings.Contains(err.Error(), "not amd64") {
		t.Errorf("an arm64 binary: err = %v, want 'not amd64'", err)
	}

	dynamic := "/bin/true"
	if f, err := elf.Open(dynamic); err != nil || f.Machine != elf.EM_X86_64 {
		t.Skipf("no dynamically linked amd64 %s on this machine to check the cgo case with", dynamic)
	}
	if err := CheckStaticLinuxAMD64(dynamic); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("dynamically linked %s: err = %v, want advice to build with CGO_ENABLED=0", dynamic, err)
	}
}

type tarFile struct {
	hdr  *tar.Header
	data []byte
}

func layerFiles(t *testing.T, l v1.Layer) map[string]tarFile {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]tarFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = tarFile{hdr: hdr, data: data}
	}
}

func names(files map[string]tarFile) []string {
	var n []string
	for k := range files {
		n = append(n, k)
	}
	return n
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
