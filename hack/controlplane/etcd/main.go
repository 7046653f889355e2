// Command etcd is upstream etcd. `go install go.etcd.io/etcd/server/v3@version`
// fails on that module's replace directives, so this main calls etcdmain instead.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
