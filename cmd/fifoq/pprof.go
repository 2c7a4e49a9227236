//go:build fifoq_pprof

package main

import (
	"net/http"
	_ "net/http/pprof" // the profiles, on the listener below only
	"os"
)

// A binary built with -tags fifoq_pprof serves Go's profiles on
// FIFOQ_PPROF_ADDR (a loopback HOST:PORT), for measuring where a server's
// CPU goes (docs/benchmarks.md). A release build has no such listener.
func init() {
	if addr := os.Getenv("FIFOQ_PPROF_ADDR"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
