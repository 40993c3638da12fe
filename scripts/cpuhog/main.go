// Command cpuhog keeps every CPU busy until it is signalled or --max has
// passed: the load `make test-loaded` runs the suite beside, at a lower
// priority (it is started under nice), so timing in the tests meets a
// loaded machine as it does on a shared CI host.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	max := flag.Duration("max", 2*time.Hour, "exit after this long even if nobody stops it")
	n := flag.Int("n", runtime.NumCPU(), "spinning goroutines (default: one per CPU)")
	flag.Parse()
	if *n < 1 || *max <= 0 {
		fmt.Fprintln(os.Stderr, "cpuhog: want -n >= 1 and -max > 0")
		os.Exit(2)
	}
	for i := 0; i < *n; i++ {
		go func() {
			x := uint64(i)
			for {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}()
	}
	fmt.Printf("cpuhog: %d spinners for at most %v (pid %d)\n", *n, *max, os.Getpid())
	time.Sleep(*max)
}
