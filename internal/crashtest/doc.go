// Package crashtest holds fifoq's crash test: it runs the real fifoq binary
// as a subprocess, drives it with concurrent producers and consumers, kills
// it with SIGKILL at random moments, restarts it on the same data directory,
// and checks the recorded history for lost, resurrected, reordered or
// duplicated messages.
//
// The test builds the binary itself. In CI it runs in a short form; run it
// longer with
//
//	go test ./internal/crashtest -crash.kills=20 -crash.interval=3s
package crashtest
