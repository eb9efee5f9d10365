package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations in index.json that name the image: containerd (ctr import,
// `kind load image-archive`) reads the first, OCI tools the second.
const (
	containerdNameAnnotation = "io.containerd.image.name"
	ociRefNameAnnotation     = "org.opencontainers.image.ref.name"
)

// dockerManifest is one entry of manifest.json, the index `docker load`
// reads.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes img as a tar holding an OCI image layout (oci-layout,
// index.json, blobs/sha256/…) plus a docker manifest.json over the same
// blobs — the format `docker save` writes since Docker 25. So one file
// loads with `docker load`, `kind load image-archive`, `ctr images import`,
// `podman load` and `skopeo copy oci-archive:`. Entries are in a fixed
// order with a fixed time: the same image gives the same bytes.
func WriteArchive(w io.Writer, ref name.Tag, img v1.Image, modTime time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}

	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mediaType,
			Digest:    digest,
			Size:      int64(len(manifest)),
			Annotations: map[string]string{
				containerdNameAnnotation: ref.Name(),
				ociRefNameAnnotation:     ref.TagStr(),
			},
		}},
	})
	if err != nil {
		return err
	}
	docker := dockerManifest{Config: blobPath(configName), RepoTags: []string{ref.Name()}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		docker.Layers = append(docker.Layers, blobPath(d))
	}
	dockerJSON, err := json.Marshal([]dockerManifest{docker})
	if err != nil {
		return err
	}

	a := &archive{tw: tar.NewWriter(w), modTime: modTime.UTC()}
	a.dir("blobs/")
	a.dir("blobs/sha256/")
	a.file(blobPath(configName), config)
	for _, l := range layers {
		a.layer(l)
	}
	a.file(blobPath(digest), manifest)
	a.file("index.json", index)
	a.file("manifest.json", dockerJSON)
	a.file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	if a.err != nil {
		return a.err
	}
	return a.tw.Close()
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// archive writes tar entries and keeps the first error.
type archive struct {
	tw      *tar.Writer
	modTime time.Time
	err     error
}

func (a *archive) dir(path string) {
	if a.err != nil {
		return
	}
	a.err = a.tw.WriteHeader(&tar.Header{Name: path, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: a.modTime})
}

func (a *archive) file(path string, data []byte) {
	a.stream(path, int64(len(data)), bytes.NewReader(data))
}

func (a *archive) layer(l v1.Layer) {
	if a.err != nil {
		return
	}
	d, err := l.Digest()
	if err != nil {
		a.err = err
		return
	}
	size, err := l.Size()
	if err != nil {
		a.err = err
		return
	}
	rc, err := l.Compressed()
	if err != nil {
		a.err = err
		return
	}
	defer rc.Close()
	a.stream(blobPath(d), size, rc)
}

func (a *archive) stream(path string, size int64, r io.Reader) {
	if a.err != nil {
		return
	}
	if a.err = a.tw.WriteHeader(&tar.Header{Name: path, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: a.modTime}); a.err != nil {
		return
	}
	n, err := io.Copy(a.tw, r)
	if err == nil && n != size {
		err = fmt.Errorf("%s: wrote %d bytes, expected %d", path, n, size)
	}
	a.err = err
}
