// Package crashtest holds fifoq's crash test: it runs the real fifoq binary
// as a subprocess, drives it with concurrent producers and consumers, kills
// it with SIGKILL at random moments, restarts it on the same data directory,
// and checks the recorded history with internal/historycheck, the failover
// test's checker: lost, undone deletes (resurrected messages), reordered or
// duplicated messages, groups held by two consumers at once, each group's
// linearizability — and that every body delivered is the one sent.
//
// The test builds the binary itself. The suite's first tier kills it once;
// the second (FIFOQ_TESTS=all, internal/testenv), as CI runs it, three
// times, and adds the long tests: memory cgroups, body compaction under
// kills, abusive clients. Run it longer with
//
//	go test ./internal/crashtest -crash.kills=20 -crash.interval=3s
package crashtest
