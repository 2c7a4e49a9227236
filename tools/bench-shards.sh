#!/usr/bin/env bash
# Measures what a cluster's nodes deliver together (docs/benchmarks.md,
# "Shards: throughput as nodes and shards grow").
#
#   tools/bench-shards.sh NODES SHARDS [QUOTA_PERCENT] [SECONDS] [CLIENT]
#
# Starts NODES fifoq servers on loopback, each in a cgroup-v1 CPU quota of
# QUOTA_PERCENT of one core (default 15), all with the same flags and
# --shards SHARDS (SHARDS "default": no --shards flag, the servers' own
# default, auto), then runs one `fifoq bench` per node at once (FIFO,
# batches of 10, 4 producers and 4 consumers, verified), each on a queue of
# its own created through that node, with the bench's CLIENT ("sdk", the
# default, or "lean", which takes less of the machine's CPU), and prints
# every bench's rate and their sum. Needs root (cgroups) and a built fifoq
# on PATH or in $FIFOQ. With KEEP set to a directory, the benches' JSON
# results and the servers' logs are copied there.
set -euo pipefail
nodes=${1:?nodes}
shards=${2:?shards}
quota=${3:-15}
secs=${4:-20}
client=${5:-sdk}
bin=${FIFOQ:-fifoq}
work=$(mktemp -d)
base=21000
pids=()
cleanup() {
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.log "$work"/*.err "$KEEP"/ 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in $(seq 1 "$nodes"); do rmdir "/sys/fs/cgroup/cpu/fq-bench-n$i" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
shard_flag=(--shards "$shards")
settle=$shards
if [ "$shards" = default ]; then
  shard_flag=()
  settle=$nodes
elif [ "$shards" = auto ]; then
  settle=$nodes
fi

peers=""
for i in $(seq 1 "$nodes"); do
  peers+="${peers:+,}n$i=127.0.0.1:$((base + 100 + i))"
done
for i in $(seq 1 "$nodes"); do
  cg=/sys/fs/cgroup/cpu/fq-bench-n$i
  mkdir -p "$cg"
  echo 100000 > "$cg/cpu.cfs_period_us"
  echo $((quota * 1000)) > "$cg/cpu.cfs_quota_us"
  bash -c "echo \$\$ > $cg/cgroup.procs; exec $bin serve --listen 127.0.0.1:$((base + i)) --data-dir $work/d$i \
    --node-id n$i --raft-addr 127.0.0.1:$((base + 100 + i)) --peers $peers ${shard_flag[*]}" > "$work/n$i.log" 2>&1 &
  pids+=($!)
done
# Let the shards be created and their leaders spread (a node hands a
# leadership over at most every five seconds).
sleep $((5 + 3 * settle))
bench_pids=()
for i in $(seq 1 "$nodes"); do
  $bin bench --endpoint "http://127.0.0.1:$((base + i))" --queue "bench-n$i.fifo" --duration "${secs}s" \
    --batch 10 --producers 4 --consumers 4 --groups 16 --client "$client" --json --quiet > "$work/bench$i.json" 2> "$work/bench$i.err" &
  bench_pids+=($!)
done
for p in "${bench_pids[@]}"; do wait "$p" || true; done
total=0
for i in $(seq 1 "$nodes"); do
  # The rate is of messages sent, received and deleted, verified: none
  # lost, none twice, order kept per group.
  read -r rate ok errs < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["receive_per_second"]), d["verification"]["ok"], d["send_errors"] + d["receive_errors"])' "$work/bench$i.json" 2>/dev/null || echo "0 False ?")
  echo "n$i: $rate msg/s verified=$ok errors=$errs"
  total=$((total + rate))
done
echo "nodes=$nodes shards=$shards quota=${quota}% client=$client total=$total msg/s"
curl -s "http://127.0.0.1:$((base + 1))/cluster/shards" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join("shard%d:%s/%dq" % (s["shard"], s["leader_id"], len(s.get("queues") or [])) for s in d["shards"]))'
