package overrides

import (
	"strings"
	"testing"
)

const digest = "sha256:dbcc1c35ac38df41fd2f5e4130b32ffdb93ebae8b3dbe638c23575912276fc9c"

func TestParseImageRef(t *testing.T) {
	tests := []struct {
		image string
		want  imageRef
	}{
		{"nginx", imageRef{repository: "nginx"}},
		{"nginx:1.25", imageRef{repository: "nginx", tag: "1.25"}},
		{"library/nginx:1.25", imageRef{repository: "library/nginx", tag: "1.25"}},
		// No dot, port or localhost: "ubuntu" is a path component, not a registry.
		{"ubuntu/nginx", imageRef{repository: "ubuntu/nginx"}},
		{"docker.io/library/nginx:1.25", imageRef{registry: "docker.io", repository: "library/nginx", tag: "1.25"}},
		{"registry.k8s.io/pause:3.9", imageRef{registry: "registry.k8s.io", repository: "pause", tag: "3.9"}},
		{"fictional.registry.example:10443/karmada/controller:v1.0.0", imageRef{registry: "fictional.registry.example:10443", repository: "karmada/controller", tag: "v1.0.0"}},
		{"localhost/app", imageRef{registry: "localhost", repository: "app"}},
		{"localhost:5000/app", imageRef{registry: "localhost:5000", repository: "app"}},
		{"[::1]:5000/app:dev", imageRef{registry: "[::1]:5000", repository: "app", tag: "dev"}},
		{"nginx@" + digest, imageRef{repository: "nginx", digest: digest}},
		{"quay.io/org/app:v2@" + digest, imageRef{registry: "quay.io", repository: "org/app", tag: "v2", digest: digest}},
		{"my_org/my__app-x--y.z", imageRef{repository: "my_org/my__app-x--y.z"}},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := parseImageRef(tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseImageRef = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.image {
				t.Errorf("String() = %q, want the input back", s)
			}
		})
	}
}

func TestParseImageRefRejects(t *testing.T) {
	tests := []struct {
		image, want string
	}{
		{"", "empty image reference"},
		{"Nginx", `invalid repository "Nginx"`},
		{"nginx:", `invalid tag ""`},
		{"nginx:-bad", `invalid tag "-bad"`},
		{"nginx@sha256:abc", `invalid digest "sha256:abc"`},
		{"registry.example.com/", `invalid repository ""`},
		{"-bad.example.com/app", `invalid registry "-bad.example.com"`},
		{"app//x", `invalid repository "app//x"`},
		{strings.Repeat("a", 256), "longer than 255 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			_, err := parseImageRef(tt.image)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parseImageRef(%q) error = %v, want it to contain %q", tt.image, err, tt.want)
			}
		})
	}
}
