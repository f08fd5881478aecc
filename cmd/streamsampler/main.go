// Command streamsampler prepares, advances and serves epochs of neighbor
// samples streamed from a chunked graph directory (see docs/SAMPLER.md).
package main

import "os"

func main() {
	setGoMemoryLimit()
	shareCPUs()
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
