// Command etcd is the etcd server that Flotilla's tests run against, built
// from the module proxy so that a fresh machine needs no download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
