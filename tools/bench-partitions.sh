#!/usr/bin/env bash
# Measures one busy FIFO queue over a cluster, high-throughput against
# plain (docs/benchmarks.md, "Partitions: one busy queue over the shards").
#
#   tools/bench-partitions.sh MODE [NODES] [QUOTA_PERCENT] [SECONDS] [CLIENTS]
#
# MODE is "ht" (DeduplicationScope messageGroup, FifoThroughputLimit
# perMessageGroupId: the cluster spreads the queue over its shards) or
# "plain" (a FIFO queue in one shard). Starts NODES (default 6) fifoq
# servers on loopback, each in a cgroup-v1 CPU quota of QUOTA_PERCENT of
# one core (default 15), all with the same flags (--peers naming all of
# them), creates the queue through the first, waits for it to spread,
# then runs one `fifoq bench` whose CLIENTS producers and CLIENTS
# consumers (default 12) spread over all the nodes: 256 message groups,
# batches of 10, send-receive-delete, verified (nothing lost, nothing
# twice, order kept per group). Needs root (cgroups) and a built fifoq on
# PATH or in $FIFOQ. With KEEP set to a directory, the bench's JSON result,
# the servers' logs and their /metrics at the bench's end are copied
# there. SPLIT_RATE, if set, is the servers' --partition-split-rate (a
# low one makes busy partitions split during the bench, whose send
# latencies then show the pause); CLIENT is
# the bench's client, lean by default (sdk retries what a split refuses,
# as an application's SDK does). GROUP_RUN, if set, is the bench's
# --group-run: 10 makes each batch one group's messages.
set -euo pipefail
mode=${1:?mode: ht or plain}
nodes=${2:-6}
quota=${3:-15}
secs=${4:-20}
clients=${5:-12}
bin=${FIFOQ:-fifoq}
work=$(mktemp -d)
base=22000
pids=()
cleanup() {
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.log "$work"/*.err "$KEEP"/ 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in $(seq 1 "$nodes"); do rmdir "/sys/fs/cgroup/cpu/fq-part-n$i" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
case "$mode" in
  ht) ht=(--high-throughput); attrs='"FifoQueue":"true","DeduplicationScope":"messageGroup","FifoThroughputLimit":"perMessageGroupId"' ;;
  plain) ht=(); attrs='"FifoQueue":"true"' ;;
  *) echo "mode must be ht or plain" >&2; exit 2 ;;
esac
peers=""
endpoints=""
for i in $(seq 1 "$nodes"); do
  peers+="${peers:+,}n$i=127.0.0.1:$((base + 100 + i))"
  endpoints+="${endpoints:+,}http://127.0.0.1:$((base + i))"
done
for i in $(seq 1 "$nodes"); do
  cg=/sys/fs/cgroup/cpu/fq-part-n$i
  mkdir -p "$cg"
  echo 100000 > "$cg/cpu.cfs_period_us"
  echo $((quota * 1000)) > "$cg/cpu.cfs_quota_us"
  # With PROFILE set to a directory (and a fifoq built with -tags
  # fifoq_pprof), each node serves Go's profiles, and a CPU profile of
  # every node over the bench is written there.
  pprof_env=""
  if [ -n "${PROFILE:-}" ]; then pprof_env="FIFOQ_PPROF_ADDR=127.0.0.1:$((base + 200 + i))"; fi
  bash -c "echo \$\$ > $cg/cgroup.procs; exec env $pprof_env $bin serve --listen 127.0.0.1:$((base + i)) --data-dir $work/d$i \
    --node-id n$i --raft-addr 127.0.0.1:$((base + 100 + i)) --peers $peers ${SPLIT_RATE:+--partition-split-rate $SPLIT_RATE}" > "$work/n$i.log" 2>&1 &
  pids+=($!)
done
# Let the shards be created and their leaders spread (a node hands a
# leadership over at most every five seconds).
sleep $((5 + 3 * nodes))
queue="part-$mode.fifo"
curl -s -o /dev/null -w "create: %{http_code}\n" -H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: AmazonSQS.CreateQueue' \
  -d "{\"QueueName\":\"$queue\",\"Attributes\":{\"VisibilityTimeout\":\"60\",$attrs}}" "http://127.0.0.1:$((base + 1))/"
# The first group's leader spreads a high-throughput queue within seconds
# of its first message; that one is taken off again before the bench,
# which counts any message it did not send as foreign.
call() {
  curl -s -H 'Content-Type: application/x-amz-json-1.0' -H "X-Amz-Target: AmazonSQS.$1" -d "$2" "http://127.0.0.1:$((base + 1))/"
}
url=$(call GetQueueUrl "{\"QueueName\":\"$queue\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["QueueUrl"])')
call SendMessage "{\"QueueUrl\":\"$url\",\"MessageBody\":\"first\",\"MessageGroupId\":\"first\",\"MessageDeduplicationId\":\"first\"}" > /dev/null
sleep 10
handle=$(call ReceiveMessage "{\"QueueUrl\":\"$url\",\"WaitTimeSeconds\":5}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Messages"][0]["ReceiptHandle"])')
call DeleteMessage "{\"QueueUrl\":\"$url\",\"ReceiptHandle\":\"$handle\"}" > /dev/null
curl -s "http://127.0.0.1:$((base + 1))/cluster/shards" | python3 -c '
import json,sys
d=json.load(sys.stdin)
print("placed:", " ".join("shard%d:%s" % (s["shard"], ",".join(q.split("/")[-1] for q in s.get("queues") or [] if "part-" in q)) for s in d["shards"] if any("part-" in q for q in s.get("queues") or [])))'
# Each server's CPU over the bench, from its /metrics.
cpu() {
  for i in $(seq 1 "$nodes"); do
    curl -s "http://127.0.0.1:$((base + i))/metrics" | awk '/^process_cpu_seconds_total/ {print $2}'
  done | tr '\n' ' '
}
cpu_before=$(cpu)
t0=$(date +%s.%N)
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  for i in $(seq 1 "$nodes"); do
    curl -s -o "$PROFILE/$mode-n$i.pprof" "http://127.0.0.1:$((base + 200 + i))/debug/pprof/profile?seconds=$((secs - 2))" &
  done
fi
$bin bench --endpoint "$endpoints" --queue "$queue" "${ht[@]}" --duration "${secs}s" --batch 10 ${GROUP_RUN:+--group-run $GROUP_RUN} --producers "$clients" --consumers "$clients" \
  --groups 256 --client "${CLIENT:-lean}" --metrics off --json --quiet > "$work/bench.json" 2> "$work/bench.err" || true
cpu_after=$(cpu)
t1=$(date +%s.%N)
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  for i in $(seq 1 "$nodes"); do curl -s -o "$KEEP/metrics-n$i.txt" "http://127.0.0.1:$((base + i))/metrics"; done
fi
python3 -c 'import sys
b, a, secs = sys.argv[1].split(), sys.argv[2].split(), float(sys.argv[4]) - float(sys.argv[3])
print("server cpu (share of a core over the bench): " + " ".join("n%d:%.2f" % (i + 1, (float(y) - float(x)) / secs) for i, (x, y) in enumerate(zip(b, a))))' "$cpu_before" "$cpu_after" "$t0" "$t1" || true
python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
print("mode=%s nodes=%s quota=%s%% rate=%d msg/s verified=%s errors=%d first_error=%s" % (sys.argv[2], sys.argv[3], sys.argv[4],
  round(d["receive_per_second"]), d["verification"]["ok"], d["send_errors"] + d["receive_errors"], d.get("first_error", "")))
print("send latency ms: " + " ".join("%s=%s" % (k, v) for k, v in sorted(d.get("send_latency_ms", {}).items())))' \
  "$work/bench.json" "$mode" "$nodes" "$quota" || cat "$work/bench.err"
