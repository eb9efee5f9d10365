// Command imagebuild builds Flotilla's container images without Docker or a
// registry (`make images`): each static linux/amd64 binary goes on an empty
// base with its entrypoint, user 65532:65532 and OCI labels, and each image
// is written as an archive out/images/<name>.tar that `docker load`,
// `kind load image-archive`, `ctr images import` and skopeo all read.
//
//	imagebuild --registry ghcr.io/flotilla-io --tag dev --bin-dir out/bin/linux_amd64 --out out/images flotilla-manager flotilla-estimator
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Source is the project's address, the images' org.opencontainers.image.source.
const Source = "https://github.com/flotilla-io/flotilla"

type options struct {
	registry, tag, binDir, out, revision string
	created                              time.Time
}

func main() {
	var o options
	flag.StringVar(&o.registry, "registry", "ghcr.io/flotilla-io", "registry and path of the images")
	flag.StringVar(&o.tag, "tag", "dev", "tag of the images")
	flag.StringVar(&o.binDir, "bin-dir", "out/bin/linux_amd64", "folder of the static linux/amd64 binaries")
	flag.StringVar(&o.out, "out", "out/images", "folder to write <name>.tar into")
	flag.StringVar(&o.revision, "revision", "", "source revision (git commit) for the org.opencontainers.image.revision label")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "imagebuild: name the binaries to package, e.g. flotilla-manager")
		os.Exit(2)
	}
	var err error
	if o.created, err = sourceDateEpoch(); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(2)
	}
	for _, bin := range flag.Args() {
		if err := o.build(bin); err != nil {
			fmt.Fprintln(os.Stderr, "imagebuild:", err)
			os.Exit(1)
		}
	}
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH (reproducible-builds.org), else the
// Unix epoch: images of the same binaries are the same, byte for byte.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", v)
	}
	return time.Unix(secs, 0), nil
}

// Labels are the OCI annotations of the image config.
func Labels(bin, tag, revision string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   bin,
		"org.opencontainers.image.version": tag,
		"org.opencontainers.image.source":  Source,
		"org.opencontainers.image.vendor":  "Flotilla",
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

func (o options) build(bin string) error {
	ref, err := name.NewTag(o.registry + "/" + bin + ":" + o.tag)
	if err != nil {
		return fmt.Errorf("image name of %s: %w", bin, err)
	}
	img, err := Build(Spec{
		Name:    bin,
		Binary:  filepath.Join(o.binDir, bin),
		Labels:  Labels(bin, o.tag, o.revision),
		Created: o.created,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.out, bin+".tar")
	tmp, err := os.CreateTemp(o.out, "."+bin+"-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := WriteArchive(tmp, ref, img, o.created); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("imagebuild: %s %s -> %s\n", ref.Name(), digest, path)
	return nil
}
