// Command zkbridge is a ZooKeeper-wire-compatible coordination server.
package main

import (
	"os"

	"github.com/zkbridge/zkbridge/cli"
)

func main() {
	os.Exit(cli.Main(os.Args))
}
