// Package api_test checks Flotilla's CRDs against a real kube-apiserver:
// Karmada manifests decode and apply after changing only apiVersion, and every
// schema rule rejects bad input with the field and message a user sees.
package api_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/flotilla-io/flotilla/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration tests need a real apiserver:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop apiserver:", err)
	}
	os.Exit(code)
}
