// Package clustertest holds fifoq's cluster failover test: it runs three
// real fifoq processes as a Raft cluster on loopback, drives them with SQS
// producers and consumers spread over all nodes, kills the leader with
// SIGKILL again and again, then a follower, freezes a node with SIGSTOP and
// thaws it, and checks the recorded history of every operation.
//
// The history is recorded and checked with internal/historycheck, which the
// crash test (internal/crashtest) shares: it looks for lost messages,
// undone deletes, broken group order, groups held by two consumers at once
// and duplicates inside the deduplication interval, and checks each
// message group's history for linearizability with porcupine against a
// model of one FIFO group.
//
// The test builds the binary itself and runs in a short form by default:
// one leader kill in the suite's first tier, and in the second
// (FIFOQ_TESTS=all, internal/testenv), as CI runs it, three, a follower's
// kill and a freeze, beside the long tests (partitions, upgrades, faults).
// A soak runs with
//
//	go test ./internal/clustertest -run TestFailover -cluster.kills=20
//
// The first tier's tests run two at a time (t.Parallel, at go test's
// default -parallel of GOMAXPROCS): most of their time is spent waiting
// on elections, timeouts and processes, and one after the other they
// took 446 s of go test's 600 under -race on two cores, against about
// 230 s two at a time. Every test makes its own cluster, data dirs and
// ports, so none depends on another. The second tier's long tests
// (testenv.Long) run two at a time too, with the first tier's, but for
// those that take machine-wide things (network namespaces, a tmpfs they
// fill), inject disk or clock faults whose timing another test's load
// would blur, cut a member off in process and time its return (another
// test's load starved the in-memory network's timeouts: every member
// stepped down), or prove a broken build wrong with porcupine (a search
// whose CPU another test would slow): these run one at a time, before
// the others.
package clustertest
