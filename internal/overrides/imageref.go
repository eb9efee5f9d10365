package overrides

import (
	"fmt"
	"regexp"
	"strings"
)

// imageRef is a container image reference split the way imageOverrider
// components see it: [registry/]repository[:tag][@digest].
type imageRef struct {
	registry   string // host[:port], e.g. registry.k8s.io or localhost:5000; may be empty
	repository string // path below the registry, e.g. library/nginx
	tag        string
	digest     string // algorithm:hex, without the "@"
}

// The grammar is that of github.com/distribution/reference, which is not in
// this module's graph: lower-case path components joined by separators,
// domain components with an optional port, 128-character tags.
const (
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	maxNameLength   = 255
)

var (
	repositoryRE = regexp.MustCompile(`^` + pathComponent + `(?:/` + pathComponent + `)*$`)
	registryRE   = regexp.MustCompile(`^(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	tagRE        = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestRE     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

// parseImageRef splits an image reference. Like Karmada (and docker), the
// first path component is a registry only when it has a dot or a port, or is
// "localhost": in "ubuntu/nginx" there is no registry. Nothing is
// normalised: "nginx" stays "nginx", not docker.io/library/nginx.
func parseImageRef(s string) (imageRef, error) {
	var ref imageRef
	if s == "" {
		return ref, fmt.Errorf("empty image reference")
	}
	name := s
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, ref.digest = name[:i], name[i+1:]
		if !digestRE.MatchString(ref.digest) {
			return ref, fmt.Errorf("invalid digest %q in image %q", ref.digest, s)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, ref.tag = name[:i], name[i+1:]
		if !tagRE.MatchString(ref.tag) {
			return ref, fmt.Errorf("invalid tag %q in image %q", ref.tag, s)
		}
	}
	if len(name) > maxNameLength {
		return ref, fmt.Errorf("image name %q is longer than %d characters", name, maxNameLength)
	}
	ref.repository = name
	if i := strings.IndexByte(name, '/'); i >= 0 && isRegistry(name[:i]) {
		ref.registry, ref.repository = name[:i], name[i+1:]
		if !registryRE.MatchString(ref.registry) {
			return ref, fmt.Errorf("invalid registry %q in image %q", ref.registry, s)
		}
	}
	if !repositoryRE.MatchString(ref.repository) {
		return ref, fmt.Errorf("invalid repository %q in image %q: lower-case letters, digits and separators only", ref.repository, s)
	}
	return ref, nil
}

func isRegistry(component string) bool {
	return strings.ContainsAny(component, ".:") || component == "localhost"
}

// String joins the components back into a reference.
func (r imageRef) String() string {
	s := r.repository
	if r.registry != "" {
		s = r.registry + "/" + s
	}
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}

// tagOrDigest is the Tag component: the tag, or the digest when untagged.
func (r imageRef) tagOrDigest() string {
	if r.tag != "" {
		return r.tag
	}
	return r.digest
}

// setTagOrDigest sets the Tag component; a digest replaces the tag and a tag
// replaces the digest, since imageOverrider treats them as one component.
// A leading "@" is accepted on a digest, as Karmada's API docs write it.
func (r *imageRef) setTagOrDigest(v string) error {
	switch d := strings.TrimPrefix(v, "@"); {
	case tagRE.MatchString(v):
		r.tag, r.digest = v, ""
	case digestRE.MatchString(d):
		r.tag, r.digest = "", d
	default:
		return fmt.Errorf("%q is neither a tag nor a digest", v)
	}
	return nil
}

// removeTagOrDigest removes the tag, or the digest when there is no tag.
func (r *imageRef) removeTagOrDigest() {
	if r.tag != "" {
		r.tag = ""
		return
	}
	r.digest = ""
}
