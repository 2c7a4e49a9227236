#!/usr/bin/env bash
# Measures one shard against one node (docs/benchmarks.md, "A cluster's
# leader: fewer, larger entries", "The script, a warm-up, and one entry
# until it commits" and "Sixteen clients, sends alone, and the commit
# wait again"): FIFO batch sends through a single
# durable server, through the leader of a 3-node cluster of one group
# (--shards 1), and through one of its followers.
#
#   tools/bench-leader.sh [QUOTA_PERCENT] [SECONDS] [ROUNDS] [CLIENTS]
#
# Starts four fifoq servers on loopback, each in a cgroup-v1 CPU quota of
# QUOTA_PERCENT of one core (default 30), so that the cluster's three
# processes are not compared with one on the same two cores. Then runs
# one uncounted run on each server, and ROUNDS rounds (default 5), each
# one `fifoq bench` of SECONDS (default 5) against the single node, the
# leader and a follower in turn: FIFO, batches of 10, CLIENTS producers
# and CLIENTS consumers (default 4), 16 message groups, the SDK client,
# verified. Prints each run's sends a second, the ratios the issue asks
# of them (leader ÷ single node, follower ÷ leader, per round), and the
# CPU the server the bench talked to spent while the bench sent (SECONDS
# from its start: the sends, and the receives and deletes beside them)
# over the messages sent. The drain after the sends is left out: it
# costs a server whose commits are slower more CPU a message, for no
# more messages (docs/benchmarks.md, "Heartbeats left out while entries
# flow").
# CONSUMERS, if set, is the number of consumers instead of CLIENTS: with
# few, the rounds measure sends with little else beside them, and the
# receives and deletes mostly come in the drain after them.
# Needs root (cgroups) and a built fifoq on PATH or in $FIFOQ. With
# PROFILE set to a directory (and a fifoq built with -tags fifoq_pprof),
# a CPU profile of the single node and of the leader is taken over one
# more run each and written there, and one of the follower over a run
# through it, with its leader's over the same run (leader-behind.pprof).
# With SYSCALLS set (and perf, with the kernel's syscall tracepoints),
# each counted run also counts, with `perf stat`, the system calls by kind
# and the context switches of the server the bench talks to while it
# sends, and reads its user and system CPU (/proc/PID/stat); they are
# printed per 100 messages sent after the rounds (docs/benchmarks.md,
# "System calls a message"): steadier than rates on a shared machine.
# With KEEP set to a directory, the servers' logs, the benches' JSON
# results, each round's start time (rounds.log) and what each bench's
# server counted before and after it (NAME.requests-before,
# NAME.requests-after: fifoq_requests_total by action, the log's entries
# and commands, GC cycles) are copied there at the end.
set -euo pipefail
quota=${1:-30}
secs=${2:-5}
rounds=${3:-5}
clients=${4:-4}
consumers=${CONSUMERS:-$clients}
bin=${FIFOQ:-fifoq}
work=$(mktemp -d)
base=23000
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.json "$work"/*.log "$work"/*.err "$work"/*.requests-* "$KEEP"/ 2>/dev/null || true; fi
  for n in s n1 n2 n3; do rmdir "/sys/fs/cgroup/cpu/fq-lead-$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# start NAME HTTP_PORT PPROF_PORT ARGS...: a server in a quota of its own.
start() {
  local name=$1 port=$2 pport=$3
  shift 3
  local cg=/sys/fs/cgroup/cpu/fq-lead-$name
  mkdir -p "$cg"
  echo 100000 > "$cg/cpu.cfs_period_us"
  echo $((quota * 1000)) > "$cg/cpu.cfs_quota_us"
  local pprof_env=""
  if [ -n "${PROFILE:-}" ]; then pprof_env="FIFOQ_PPROF_ADDR=127.0.0.1:$pport"; fi
  bash -c "echo \$\$ > $cg/cgroup.procs; exec env $pprof_env $bin serve --listen 127.0.0.1:$port --data-dir $work/$name $*" > "$work/$name.log" 2>&1 &
  pids+=($!)
}
peers="n1=127.0.0.1:$((base + 101)),n2=127.0.0.1:$((base + 102)),n3=127.0.0.1:$((base + 103))"
start s "$base" "$((base + 200))"
for i in 1 2 3; do
  start "n$i" "$((base + i))" "$((base + 200 + i))" --node-id "n$i" --raft-addr "127.0.0.1:$((base + 100 + i))" --peers "$peers" --shards 1
done
sleep 8
# The leader and a follower, from the first group's status.
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
# cpu PORT: the server's CPU seconds so far, from its /metrics.
cpu() { curl -s "http://127.0.0.1:$1/metrics" | awk '/^process_cpu_seconds_total/ {print $2}'; }
# requests PORT: the server's fifoq_requests_total lines (requests by
# action and outcome), none before its first request, with the log's
# entries and the commands they carried (fifoq_log_commands_per_entry's
# sum and count), their commit time, and the GC cycles so far.
requests() { curl -s "http://127.0.0.1:$1/metrics" | { grep -E '^fifoq_requests_total|^fifoq_log_(commands_per_entry|commit_duration_seconds)_(sum|count)|^go_gc_duration_seconds_count' || true; }; }
# The system calls SYSCALLS counts, by kind, beside all of them.
kinds="write read fdatasync pwrite64 pread64 futex epoll_pwait nanosleep"
events="context-switches,raw_syscalls:sys_enter"
for k in $kinds; do events="$events,syscalls:sys_enter_$k"; done
# pid PORT: the server listening on PORT (pids is in port order).
pid() { echo "${pids[$(($1 - base))]}"; }
# ticks PID: the process's user and system CPU so far, in clock ticks.
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
# syscalls NAME PID: counts PID's system calls and context switches for
# $secs into NAME.perf, and its CPU ticks before and after into NAME.ticks.
syscalls() {
  ticks "$2" > "$work/$1.ticks"
  perf stat -x, -e "$events" -p "$2" -o "$work/$1.perf" -- sleep "$secs"
  ticks "$2" >> "$work/$1.ticks"
}
# syscalls_line NAME: NAME's counts per 100 messages sent, and its user
# and system CPU a message sent.
syscalls_line() {
  python3 - "$work/$1.json" "$work/$1.perf" "$work/$1.ticks" "$1" "$(getconf CLK_TCK)" $kinds <<'PY'
import json, sys
sent = max(json.load(open(sys.argv[1]))["sent"], 1)
(u0, s0), (u1, s1) = [map(int, l.split()) for l in open(sys.argv[3])]
tick_us = 1e6 / float(sys.argv[5])
counts = {}
for line in open(sys.argv[2]):
    f = line.strip().split(",")
    if len(f) > 2 and f[0][:1].isdigit():
        counts[f[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all")] = float(f[0])
line = "%-4s user %5.1f sys %5.1f us/msg | per 100 msgs:" % (sys.argv[4], (u1 - u0) * tick_us / sent, (s1 - s0) * tick_us / sent)
for k in ["all"] + sys.argv[6:] + ["context-switches"]:
    line += " %s %.1f" % (k, counts.get(k, 0) * 100 / sent)
print(line)
PY
}
# run NAME PORT QUEUE: one bench; prints "SENDS CPU_US_PER_SEND OK".
run() {
  local port=$2 queue=$3 c0 c1
  c0=$(cpu "$port")
  requests "$port" > "$work/$1.requests-before"
  (sleep "$secs"; cpu "$port" > "$work/$1.cpu") &
  local sampler=$!
  local counter=""
  if [ -n "${SYSCALLS:-}" ]; then
    syscalls "$1" "$(pid "$port")" &
    counter=$!
  fi
  "$bin" bench --endpoint "http://127.0.0.1:$port" --queue "$queue" --duration "${secs}s" --batch 10 \
    --producers "$clients" --consumers "$consumers" --groups 16 --metrics off --json --quiet > "$work/$1.json" 2> "$work/$1.err" || true
  wait "$sampler" $counter
  requests "$port" > "$work/$1.requests-after"
  c1=$(cat "$work/$1.cpu")
  python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
sent=max(d["sent"], 1)
ok=d["verification"]["ok"] and d["send_errors"] + d["receive_errors"] == 0
print(round(d["send_per_second"]), round((float(sys.argv[3]) - float(sys.argv[2])) * 1e6 / sent), ok)' "$work/$1.json" "$c0" "$c1" 2>/dev/null || echo "0 0 False"
}
# One run on each server first, not counted: a server's first run, on a
# new process and a new log (whose first segment is zeroed in place as
# it fills, internal/walfs), is slower than the rest.
run ws "$base" lead-ws.fifo > /dev/null
run wl "$((base + li))" lead-wl.fifo > /dev/null
run wf "$((base + fi_))" lead-wf.fifo > /dev/null
printf "%-6s %8s %8s %8s %14s %16s %12s %12s %12s\n" round single leader follower "leader/single" "follower/leader" "us/msg s" "us/msg ldr" "us/msg fol"
for r in $(seq 1 "$rounds"); do
  echo "round $r starts $(date +%T.%N)" >> "$work/rounds.log"
  read -r s s_us s_ok < <(run "s$r" "$base" "lead-s$r.fifo")
  read -r l l_us l_ok < <(run "l$r" "$((base + li))" "lead-l$r.fifo")
  read -r f f_us f_ok < <(run "f$r" "$((base + fi_))" "lead-f$r.fifo")
  python3 -c 'import sys
s, l, f = (float(x) for x in sys.argv[2:5])
print("%-6s %8d %8d %8d %14.2f %16.2f %12s %12s %12s%s" % (sys.argv[1], s, l, f, l / max(s, 1), f / max(l, 1), sys.argv[5], sys.argv[6], sys.argv[7],
  "" if sys.argv[8:] == ["True"] * 3 else "  (not verified: %s)" % " ".join(sys.argv[8:])))' \
    "$r" "$s" "$l" "$f" "$s_us" "$l_us" "$f_us" "$s_ok" "$l_ok" "$f_ok"
  if [ -n "${SYSCALLS:-}" ]; then
    for n in s l f; do syscalls_line "$n$r" >> "$work/syscalls.txt"; done
  fi
done
echo "(us/msg: the CPU the server the bench talked to spent while it sent, a message sent)"
if [ -n "${SYSCALLS:-}" ]; then
  echo "system calls, context switches and CPU while each bench sent (s: single node, l: leader, f: follower):"
  cat "$work/syscalls.txt"
fi
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  curl -s -o "$PROFILE/single.pprof" "http://127.0.0.1:$((base + 200))/debug/pprof/profile?seconds=$((secs - 1))" &
  p=$!
  read -r sp_sent sp_us _ < <(run sp "$base" lead-sp.fifo)
  wait "$p"
  curl -s -o "$PROFILE/leader.pprof" "http://127.0.0.1:$((base + 200 + li))/debug/pprof/profile?seconds=$((secs - 1))" &
  p=$!
  read -r lp_sent lp_us _ < <(run lp "$((base + li))" lead-lp.fifo)
  wait "$p"
  # The follower and, at the same time, the leader it forwards to.
  curl -s -o "$PROFILE/follower.pprof" "http://127.0.0.1:$((base + 200 + fi_))/debug/pprof/profile?seconds=$((secs - 1))" &
  p=$!
  curl -s -o "$PROFILE/leader-behind.pprof" "http://127.0.0.1:$((base + 200 + li))/debug/pprof/profile?seconds=$((secs - 1))" &
  p2=$!
  read -r fp_sent fp_us _ < <(run fp "$((base + fi_))" lead-fp.fifo)
  wait "$p" "$p2"
  # The rates let the profiles be compared per message.
  echo "profiles in $PROFILE: single node $sp_sent sends/s ($sp_us us/msg), leader $lp_sent sends/s ($lp_us us/msg), follower $fp_sent sends/s ($fp_us us/msg; leader-behind.pprof is its leader meanwhile)"
fi
