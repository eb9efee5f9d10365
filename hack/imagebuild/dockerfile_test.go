package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// `make docker-build` builds `--target <binary>` for every cmd/flotilla-*;
// the Dockerfile needs a stage of that name, with the entrypoint and user
// `make images` gives the same binary.
func TestDockerfileHasAStagePerInClusterBinary(t *testing.T) {
	root := filepath.Join("..", "..")
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := filepath.Glob(filepath.Join(root, "cmd", "flotilla-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) == 0 {
		t.Fatal("no cmd/flotilla-* found: the test runs from the wrong folder")
	}
	for _, c := range cmds {
		bin := filepath.Base(c)
		stage := regexp.MustCompile(`(?ms)^FROM scratch AS ` + regexp.QuoteMeta(bin) + `\n(.*?)(\n\n|\z)`).FindSubmatch(dockerfile)
		if stage == nil {
			t.Errorf("Dockerfile has no stage `FROM scratch AS %s`", bin)
			continue
		}
		for _, want := range []string{
			`COPY --from=build /out/` + bin + ` /` + bin,
			`USER ` + User,
			`ENTRYPOINT ["/` + bin + `"]`,
		} {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(stage[1]) {
				t.Errorf("stage %s lacks %q", bin, want)
			}
		}
	}
}
