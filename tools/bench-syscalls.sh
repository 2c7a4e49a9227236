#!/usr/bin/env bash
# Counts what a message costs a server in the kernel (docs/benchmarks.md,
# "System calls a message"): the same four servers as
# tools/bench-leader.sh (a single durable node and a 3-node cluster of one
# group, each in a cgroup-v1 CPU quota of 30 % of a core), and for each
# run the user and system CPU of the server the bench talked to, its
# system calls by kind and its context switches, per 100 messages sent.
#
#   tools/bench-syscalls.sh [SECONDS] [ROUNDS] [CLIENTS]
#
# Each round runs `fifoq bench` (FIFO, batches of 10, CLIENTS producers
# and consumers, 16 groups, verified) against the single node, the leader
# and a follower in turn, with `perf stat` counting the syscalls
# tracepoints of that server meanwhile. Counts are steadier than rates on
# a shared machine: a round's rate moves by a quarter, its calls a
# message by a few percent. CPU is from /proc/PID/stat over the perf
# window and the bench's drain, so it reads higher than bench-leader.sh.
# Needs root, perf with tracepoints, and a built fifoq on PATH or in
# $FIFOQ.
set -euo pipefail
secs=${1:-10}
rounds=${2:-3}
clients=${3:-16}
quota=30
bin=${FIFOQ:-fifoq}
work=$(mktemp -d)
base=23600
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for n in s n1 n2 n3; do rmdir "/sys/fs/cgroup/cpu/fq-sys-$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
declare -A pid
# start NAME HTTP_PORT ARGS...: a server in a quota of its own.
start() {
  local name=$1 port=$2
  shift 2
  local cg=/sys/fs/cgroup/cpu/fq-sys-$name
  mkdir -p "$cg"
  echo 100000 > "$cg/cpu.cfs_period_us"
  echo $((quota * 1000)) > "$cg/cpu.cfs_quota_us"
  bash -c "echo \$\$ > $cg/cgroup.procs; exec $bin serve --listen 127.0.0.1:$port --data-dir $work/$name $*" > "$work/$name.log" 2>&1 &
  pids+=($!)
  pid[$name]=$!
}
peers="n1=127.0.0.1:$((base + 101)),n2=127.0.0.1:$((base + 102)),n3=127.0.0.1:$((base + 103))"
start s "$base"
for i in 1 2 3; do
  start "n$i" "$((base + i))" --node-id "n$i" --raft-addr "127.0.0.1:$((base + 100 + i))" --peers "$peers" --shards 1
done
sleep 8
leader=""
for _ in $(seq 1 30); do
  leader=$(curl -s "http://127.0.0.1:$((base + 1))/cluster/shards" | python3 -c '
import json,sys
d=json.load(sys.stdin)
print(next(s["leader_id"] for s in d["shards"] if s["shard"] == 0))' 2>/dev/null || true)
  [ -n "$leader" ] && break
  sleep 1
done
[ -n "$leader" ] || { echo "no leader" >&2; exit 1; }
li=${leader#n}
fi_=$((li % 3 + 1))
echo "leader n$li, follower n$fi_"
kinds="write read fdatasync pwrite64 pread64 futex epoll_pwait nanosleep"
events="task-clock,context-switches,raw_syscalls:sys_enter"
for k in $kinds; do events="$events,syscalls:sys_enter_$k"; done
# ticks PID: the process's user and system CPU so far, in clock ticks.
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
# run NAME PORT PID: one bench, counted; prints one line.
run() {
  local name=$1 port=$2 p=$3 u0 s0 u1 s1
  read -r u0 s0 < <(ticks "$p")
  perf stat -x, -e "$events" -p "$p" -o "$work/$name.perf" -- sleep "$secs" &
  local perf=$!
  "$bin" bench --endpoint "http://127.0.0.1:$port" --queue "sys-$name.fifo" --duration "${secs}s" --batch 10 \
    --producers "$clients" --consumers "$clients" --groups 16 --metrics off --json --quiet > "$work/$name.json" 2> "$work/$name.err" || true
  wait "$perf"
  read -r u1 s1 < <(ticks "$p")
  python3 - "$work/$name.json" "$work/$name.perf" "$u0" "$s0" "$u1" "$s1" "$name" "$(getconf CLK_TCK)" $kinds <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sent = max(d["sent"], 1)
tick_us = 1e6 / float(sys.argv[8])
user = (int(sys.argv[5]) - int(sys.argv[3])) * tick_us / sent
system = (int(sys.argv[6]) - int(sys.argv[4])) * tick_us / sent
counts = {}
for line in open(sys.argv[2]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0][:1].isdigit():
        counts[f[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all")] = float(f[0])
ok = d["verification"]["ok"] and d["send_errors"] + d["receive_errors"] == 0
line = "%-4s %6d/s  user %5.1f  sys %5.1f us/msg | per 100 msgs:" % (sys.argv[7], d["send_per_second"], user, system)
for k in ["all"] + sys.argv[9:] + ["context-switches"]:
    line += " %s %.1f" % (k, counts.get(k, 0) * 100 / sent)
print(line + ("" if ok else "  (not verified)"))
PY
}
# One uncounted run on each server first (bench-leader.sh says why).
run ws "$base" "${pid[s]}" > /dev/null
run wl "$((base + li))" "${pid[n$li]}" > /dev/null
run wf "$((base + fi_))" "${pid[n$fi_]}" > /dev/null
for r in $(seq 1 "$rounds"); do
  run "s$r" "$base" "${pid[s]}"
  run "l$r" "$((base + li))" "${pid[n$li]}"
  run "f$r" "$((base + fi_))" "${pid[n$fi_]}"
done
echo "(s: the single node, l: the leader, f: a follower; CPU over the counted window and the bench's drain)"
