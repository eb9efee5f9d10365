package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user: the conventional "nonroot" of distroless
// images, which the manager's Deployment also runs as.
const User = "65532:65532"

// Spec describes one image: a single static binary on an empty base.
type Spec struct {
	// Name is the binary's name; it becomes /<Name>, the entrypoint.
	Name string
	// Binary is the path of the linux/amd64 static executable.
	Binary string
	// Labels are the image config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Created is the time written into the image; a fixed time (the
	// commit's, or the epoch) makes the same binary give the same digest.
	Created time.Time
}

// Entrypoint is where the binary sits in the image.
func (s Spec) Entrypoint() string { return "/" + s.Name }

// Build makes the image: an OCI manifest with one layer holding the binary
// (root-owned, mode 0755) and a config naming it as the entrypoint, run as
// User, for linux/amd64.
func Build(s Spec) (v1.Image, error) {
	if err := CheckStaticLinuxAMD64(s.Binary); err != nil {
		return nil, err
	}
	layerTar, err := binaryLayer(s)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", s.Name, err)
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "hack/imagebuild: " + s.Entrypoint(), Comment: "static binary on an empty base"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = created
	cfg.Config.Entrypoint = []string{s.Entrypoint()}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = s.Labels
	return mutate.ConfigFile(img, cfg)
}

// binaryLayer is the uncompressed tar of the layer: the binary alone.
func binaryLayer(s Spec) ([]byte, error) {
	data, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Name:     s.Name,
		Typeflag: tar.TypeReg,
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  s.Created.UTC(),
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckStaticLinuxAMD64 refuses what cannot run on an empty linux/amd64
// base: anything but a 64-bit x86 ELF executable without a dynamic loader
// (a binary built with cgo, or for another platform).
func CheckStaticLinuxAMD64(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a linux executable: %w", filepath.Base(path), err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is built for %s, not amd64: build with GOOS=linux GOARCH=amd64", filepath.Base(path), f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it needs a loader the empty base lacks): build with CGO_ENABLED=0", filepath.Base(path))
		}
	}
	return nil
}
