// Command slogate gates changes to an LLM serving stack on measured serving quality.
// See the README for usage.
package main

import (
	"os"

	"github.com/slogate/slogate/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
