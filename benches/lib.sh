# shellcheck shell=bash
# Sourced by the benches: process bookkeeping, BIRD helpers, the router
# BIRD and one-neighbor pathosd configs shared by convergence.sh,
# compare.sh, idle-parts.sh, size.sh and hot-text.sh, and the ubusd and
# accept-and-close backend of status-scale.sh and answer-memory.sh. The
# sourcing script owns `pids` (every process it started; `cleanup_pids`
# stops them by PID) and may set `birdc`.

pids=()

# A zombie child still answers `kill -0`: look at its state instead.
alive() {
  [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# SIGTERM, up to 5 s to exit (pathosd withdraws and sends a Cease first),
# then SIGKILL: a busy daemon must not hold the script. A stopped process
# gets SIGCONT too, or it would never see the SIGTERM.
stop() {
  local i
  kill "$1" 2>/dev/null || return 0
  kill -CONT "$1" 2>/dev/null || true
  for i in $(seq 1 50); do
    alive "$1" || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Drops a stopped pid so the trap never signals a reused one.
forget() {
  local keep=() p
  for p in "${pids[@]}"; do
    [ "$p" = "$1" ] || keep+=("$p")
  done
  pids=("${keep[@]}")
}

# Stops every process still listed, newest first (a daemon before the
# router it talks to).
cleanup_pids() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop "${pids[i]}"
  done
  pids=()
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# The i-th of N /32 routes: 10.FIRST.0.0 upwards (FIRST + i / 65536 in the
# second octet), one per line.
prefixes() {
  awk -v n="$1" -v first="$2" 'BEGIN { for (i = 0; i < n; i++) printf "10.%d.%d.%d/32\n", first + int(i / 65536), int(i / 256) % 256, i % 256 }'
}

# The time now in microseconds, on the clock of a BIRD log written with
# `timeformat log "%s.%6f"`.
usec() { echo "${EPOCHREALTIME/./}"; }

# ms_between A B [DECIMALS]: the milliseconds from log time A to B (both in
# seconds), with DECIMALS (1) places; NA when either is NA.
ms_between() {
  case "$1$2" in
    *NA*) echo NA ;;
    *) awk -v a="$1" -v b="$2" -v d="${3:-1}" 'BEGIN { printf "%.*f", d, (b - a) * 1000 }' ;;
  esac
}

# The router's log is $rlog (the sourcing script's, with `timeformat log
# "%s.%6f"`); mark is where it ends now, for wait_log to read after.
mark() { stat -c %s "${rlog:?the sourcing script sets rlog}"; }

# wait_log OFFSET REGEX [COUNT]: the log time of the COUNT-th (1st) line of
# $rlog after OFFSET matching REGEX, or NA after $deadline_s (30) seconds.
wait_log() {
  local off=$1 re=$2 count=${3:-1} end got
  end=$(($(usec) + ${deadline_s:-30} * 1000000))
  while [ "$(usec)" -lt "$end" ]; do
    got=$(tail -c +"$((off + 1))" "$rlog" | grep -E "$re" | sed -n "${count}p" || true)
    if [ -n "$got" ]; then
      echo "${got%% *}"
      return 0
    fi
    sleep 0.01
  done
  echo NA
}

# Exits 1, naming what is missing, unless every command named is on PATH.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (scripts/install-test-deps.sh)" >&2; exit 1; }
  done
}

# Starts "$UBUSD" on socket $1 and waits (5 s at most) for the socket;
# $2 names the calling bench in the error.
start_ubusd() {
  local sock=$1 i
  "$UBUSD" -s "$sock" &
  pids+=($!)
  for i in $(seq 1 50); do
    [ -S "$sock" ] && return 0
    sleep 0.1
  done
  echo "$2: ubusd did not create $sock" >&2
  return 1
}

# A checks' backend on $1:$2 that accepts and closes, in a process of its
# own (a daemon probing its own port would measure its own load).
start_accept_close() {
  python3 -c '
import asyncio, sys
async def main():
    async def conn(r, w):
        w.close()
    s = await asyncio.start_server(conn, sys.argv[1], int(sys.argv[2]), backlog=4096)
    async with s:
        await s.serve_forever()
asyncio.run(main())
' "$1" "$2" &
  pids+=($!)
}

# Waits (5 s at most) until the BIRD at control socket $1 answers.
wait_ctl() {
  local sock=$1 i
  for i in $(seq 1 100); do
    "${birdc:-birdc}" -s "$sock" show status >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "BIRD at $sock did not come up" >&2
  return 1
}

# The router BIRD of size.sh's RSS run and hot-text.sh's runs: router id
# $1.1, and for each (NAME SUFFIX ASN) after the port $2 a passive
# multihop session `protocol bgp NAME` from $1.SUFFIX (AS ASN) on that
# port, AS 65000 here, importing all and exporting nothing. Printed on
# stdout.
router_bird_conf() {
  local net=$1 port=$2
  shift 2
  printf 'router id %s.1;\nprotocol device { }\n' "$net"
  while [ "$#" -ge 3 ]; do
    cat <<EOF
protocol bgp $1 {
  local $net.1 port $port as 65000; neighbor $net.$2 port $port as $3;
  multihop; strict bind on; passive on; ipv4 { import all; export none; };
}
EOF
    shift 3
  done
}

# The pathosd config of size.sh's RSS run and hot-text.sh's runs: router
# $1.2 (AS 65001) with one neighbor, the router BIRD at $1.1 port $2
# (AS 65000, multihop), no listener and no API (nothing else to serve),
# warnings only, and the VIPs $3 (the JSON objects inside "vips": [ ... ]).
# Printed on stdout.
one_neighbor_config() {
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": 65001, "router_id": "$1.2", "local_address": "$1.2" },
  "bgp": {
    "listen_port": -1,
    "neighbors": [ { "name": "router", "address": "$1.1", "port": $2, "peer_asn": 65000, "enable_multihop": true } ]
  },
  "api": { "listen": "" },
  "logging": { "level": "warn" },
  "vips": [ $3 ]
}
EOF
}
