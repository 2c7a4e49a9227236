// Package raftnet is hashicorp/raft's NetworkTransport (v1.8.0) with the
// sizes of its streams' buffers a setting, which upstream fixes at
// 256 KiB each: fifoq's shards use it with small buffers, so that an idle
// shard does not hold 2 MiB of them. The protocol on the wire is
// upstream's. FIFOQ-PATCH.md says what changed and why; the license of
// the files copied from upstream is upstream's (LICENSE, MPL-2.0).
package raftnet
