#!/usr/bin/env bash
# What a hotplug.d hook costs a withdraw: the time from a failed check to
# the route gone at the router BIRD, with no hooks and with hooks, in the
# same run.
#
#   none    hooks off (`hooks.dir` empty);
#   sleep   one hook, `sleep 60`, with hook_timeout 120s: from the first
#           transition on, the runner is always inside a sleeping hook and
#           each withdraw's event waits in the queue;
#   quick   one hook that returns at once: at each withdraw the runner is
#           idle and starts a shell for the event right then.
#
# One VIP with a tcp check (interval 60s, so only the bench's triggers
# probe it; rise 1, fall 1, fail_action withdraw) against a backend on
# loopback. Per run: the backend is stopped, the check is triggered
# (`POST /api/v1/vips/v/check`, written on a connection opened before the
# clock starts), and the figure is the router's log time of the route's
# removal (`timeformat log "%s.%6f"`, `debug { routes }`) less the script's
# clock just before the request's write (both CLOCK_REALTIME). Then the
# backend comes back and a second trigger announces the VIP again. The
# trigger's rate limit (5, then one a second) is waited out on a 429.
# Prints per kind min / p50 / p99 of RUNS (nearest rank; p99 of 20 runs
# is the largest) and the p50 and p99 differences to `none`.
#
# usage: benches/hook-latency.sh [RUNS] [none|sleep|quick...]   (default: 20 none sleep quick)
# env: PATHOSD_BIN (default target/release/pathosd).
# Needs bird, birdc, python3 (the backend). Every wait is bounded; a trap
# stops every process this script started, by PID, and a hook still
# sleeping after pathosd's stop by the process group id it wrote down.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

runs=${1:-20}
shift || true
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(none sleep quick)
bin=${PATHOSD_BIN:-target/release/pathosd}
[ -x "$bin" ] || { echo "no pathosd at $bin (cargo build --release --bin pathosd)" >&2; exit 1; }
need_tools bird birdc python3

n=$(($$ % 200 + 20))
net=127.197.$n
port=$((16000 + $$ % 900))
api_port=$((port + 1000))
backend_port=$((port + 2000))
router_ip=$net.1
pd_ip=$net.2
backend_ip=$net.3
prefix=10.197.$n.1/32
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-hooks.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT
rlog=$tmp/router.log
deadline_s=30


cat >"$tmp/router.conf" <<EOF
log "$rlog" all;
timeformat log "%s.%6f";
router id $router_ip;
protocol device { }
protocol bgp p_pathosd {
  local $router_ip port $port as 65000;
  neighbor $pd_ip port $port as 65001;
  multihop;
  strict bind on;
  passive on;
  hold time 9;
  keepalive time 3;
  graceful restart off;
  error wait time 0, 0;
  debug { states, routes };
  ipv4 { import all; export none; };
}
EOF
bird -f -c "$tmp/router.conf" -s "$tmp/router.ctl" -P "$tmp/router.pid" >/dev/null 2>"$tmp/router.err" &
pids+=("$!")
wait_ctl "$tmp/router.ctl"

removed_re="p_pathosd\.ipv4 > removed .*${prefix%/32}"
added_re="p_pathosd\.ipv4 > added .*${prefix%/32}"

backend=
backend_up() {
  start_accept_close "$backend_ip" "$backend_port"
  backend=${pids[-1]}
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/$backend_ip/$backend_port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "backend on $backend_ip:$backend_port did not come up" >&2
  return 1
}
backend_down() {
  stop "$backend"
  forget "$backend"
  backend=
}

# trigger: POST /api/v1/vips/v/check until it is not refused for the rate
# limit; sets t0 to the clock just before the accepted request's write.
t0=
trigger() {
  local fd code line _
  for _ in $(seq 1 "$deadline_s"); do
    exec {fd}<>"/dev/tcp/$pd_ip/$api_port"
    t0=$EPOCHREALTIME
    printf 'POST /api/v1/vips/v/check HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' \
      "$pd_ip" "$api_port" >&"$fd"
    code=
    IFS=' ' read -r -t 10 _ code _ <&"$fd" || true
    while IFS= read -r -t 10 line <&"$fd"; do :; done
    exec {fd}>&-
    case $code in
      200) return 0 ;;
      429) sleep 1 ;;
      *) echo "trigger answered '${code:-nothing}'" >&2; return 1 ;;
    esac
  done
  echo "trigger refused for $deadline_s s" >&2
  return 1
}

pathosd_conf() {
  local hooks=$1
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": 65001, "router_id": "$pd_ip", "local_address": "$pd_ip" },
  "bgp": {
    "listen_port": -1,
    "hold_time": "9s",
    "graceful_restart": false,
    "neighbors": [
      { "name": "router", "address": "$router_ip", "port": $port, "peer_asn": 65000, "enable_multihop": true }
    ]
  },
  "api": { "listen": "$pd_ip:$api_port" },
  "logging": { "level": "info", "syslog": false },
  "hooks": { "dir": "$hooks", "timeout": "120s" },
  "vips": [
    { "name": "v", "prefix": "$prefix",
      "check": { "type": "tcp", "interval": "60s", "timeout": "1s", "rise": 1, "fall": 1,
                 "tcp": { "host": "$backend_ip", "port": $backend_port } },
      "policy": { "fail_action": "withdraw" } }
  ]
}
EOF
}

results=$tmp/results
: >"$results"

for kind in "${kinds[@]}"; do
  hooks=$tmp/hooks-$kind
  case $kind in
    none) hooks= ;;
    sleep) mkdir -p "$hooks" && printf 'echo $$ >>%s\nsleep 60\n' "$tmp/hook-pids" >"$hooks/10-sleep" ;;
    quick) mkdir -p "$hooks" && echo ':' >"$hooks/10-quick" ;;
    *) echo "unknown kind $kind" >&2; exit 1 ;;
  esac
  pathosd_conf "$hooks" >"$tmp/pathosd-$kind.json"
  backend_up
  off=$(mark)
  "$bin" run --config "$tmp/pathosd-$kind.json" >/dev/null 2>"$tmp/pathosd-$kind.log" &
  pd=$!
  pids+=("$pd")
  if [ "$(wait_log "$off" "$added_re")" = NA ]; then
    echo "$kind: the route never reached the router" >&2
    tail -15 "$tmp/pathosd-$kind.log" >&2
    exit 1
  fi
  for r in $(seq 1 "$runs"); do
    backend_down
    off=$(mark)
    trigger
    gone=$(wait_log "$off" "$removed_re")
    [ "$gone" != NA ] || { echo "$kind run $r: the route stayed" >&2; tail "$tmp/pathosd-$kind.log" >&2; exit 1; }
    echo "$kind $(ms_between "$t0" "$gone" 2)" >>"$results"
    backend_up
    off=$(mark)
    trigger
    [ "$(wait_log "$off" "$added_re")" != NA ] || { echo "$kind run $r: the route did not come back" >&2; exit 1; }
  done
  stop "$pd"
  forget "$pd"
  # A hook still sleeping after pathosd's stop: its process group (pgid =
  # the hook shell's pid, which it wrote down), by that id.
  if [ -f "$tmp/hook-pids" ]; then
    while read -r hp; do
      if alive "$hp"; then kill -KILL -- "-$hp" 2>/dev/null || true; fi
    done <"$tmp/hook-pids"
    rm -f "$tmp/hook-pids"
  fi
  backend_down
  echo "  $kind: $runs runs done" >&2
done

# min / p50 / p99 (nearest rank) of one kind.
pct() {
  grep "^$1 " "$results" | cut -d' ' -f2 | sort -n |
    awk -v p="$2" '{ v[NR] = $1 } END { print v[int((NR * p + 99) / 100)] }'
}
echo "failed check -> route gone at the router, ms: min / p50 / p99 ($runs runs each)"
for kind in "${kinds[@]}"; do
  line="$(printf '%-6s %s / %s / %s' "$kind" "$(pct "$kind" 1)" "$(pct "$kind" 50)" "$(pct "$kind" 99)")"
  if [ "$kind" != none ] && grep -q '^none ' "$results"; then
    line="$line   (p50 $(awk -v a="$(pct none 50)" -v b="$(pct "$kind" 50)" 'BEGIN { printf "%+.2f", b - a }'), p99 $(awk -v a="$(pct none 99)" -v b="$(pct "$kind" 99)" 'BEGIN { printf "%+.2f", b - a }') against none)"
  fi
  echo "$line"
done
