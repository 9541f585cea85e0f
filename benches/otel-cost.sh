#!/usr/bin/env bash
# What the OTLP metrics export costs the daemon: CPU and memory at 1 and
# 1,000 VIPs (each with one tcp check at 1 s), with and without
# `otel.endpoint`. Both daemons run side by side against one BIRD router,
# in the same window, so the ratios hold on a shared machine; the export
# interval is short (OTEL_INTERVAL, 5 s, not the default 60 s) so a window
# holds enough exports to measure. Prints a table for docs/performance.md
# ("OTLP export cost").
#
# Layout on 127.171.0.0/24: the router BIRD .1 (passive, port 1179),
# pathosd without otel .2 (AS 65002, VIPs in 10.2/16), pathosd with otel .3
# (AS 65003, VIPs in 10.3/16), their check backends .12 and .13 port 8081
# (compare_helper.py backend: accepts, closes), the OTLP/HTTP receiver .20
# port 4318. The receiver decodes every request with PyPI's
# opentelemetry-proto (scripts/install-test-deps.sh installs it), answers
# 200, and logs the bytes it got and the data points in them.
#
# Measured over the window after a warm-up (both sessions up with every
# route, then WARMUP s): CPU of each daemon (process CPU clock,
# benches/compare_helper.py cpu), reported per 60 s; RSS and peak RSS
# (VmRSS, VmHWM) at its end; the receiver's requests and bytes in it. The
# CPU one export costs is derived: (CPU with - CPU without) / exports,
# for the process and for the daemon's main thread alone (its schedstat).
# Check timing: the probes each daemon's first and last VIP ran in the
# window, per VIP per 60 s (60 when every check keeps its 1 s schedule),
# with and without the export.
#
# Every process it starts is stopped by PID at exit (trap); every wait has a
# deadline; a missing tool is a failure, not a skip.
#
# usage: benches/otel-cost.sh
# env: COUNTS="1 1000" (VIPs per daemon), RUNS=3 (repeats; medians),
#      WINDOW=45 (s measured; about 6 minutes in all), WARMUP=10 (s), OTEL_INTERVAL=5 (s between
#      exports), DEADLINE=60 (s per wait), KEEP=1 (keep the temp dir),
#      PATHOSD=FILE (measure this binary instead of building the worktree's
#      release build).
set -eEuo pipefail
trap 'echo "otel-cost.sh: line $LINENO: exit status $?" >&2' ERR
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

read -r -a counts <<<"${COUNTS:-1 1000}"
runs=${RUNS:-3}
window=${WINDOW:-45}
warmup=${WARMUP:-10}
interval=${OTEL_INTERVAL:-5}
deadline_s=${DEADLINE:-60}
birdc=birdc
py=python3
helper=$PWD/benches/compare_helper.py

for t in bird "$birdc" "$py" curl; do
  command -v "$t" >/dev/null || { echo "otel-cost: $t not found (scripts/install-test-deps.sh)" >&2; exit 1; }
done
"$py" -c 'import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2' ||
  { echo "otel-cost: python3 has no opentelemetry-proto (scripts/install-test-deps.sh)" >&2; exit 1; }
for n in "${counts[@]}"; do
  if [ "$n" -lt 1 ] || [ "$n" -gt 65536 ]; then echo "COUNTS: each between 1 and 65536" >&2; exit 2; fi
done

if [ -n "${PATHOSD:-}" ]; then
  pathosd=$PATHOSD
else
  cargo build --release --locked --quiet
  pathosd=$PWD/target/release/pathosd
fi
[ -x "$pathosd" ] || { echo "otel-cost: $pathosd is not an executable" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-otel-cost.XXXXXX")
cleanup() {
  cleanup_pids
  if [ -n "${KEEP:-}" ]; then echo "logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

net=127.171.0
port=1179
recv=$net.20:4318
declare -A octet=([plain]=2 [otel]=3)
results=$tmp/results # "figure|variant|n value", one a line
: >"$results"
record() { echo "$1|$2|$3 $4" >>"$results"; }

# --- the router, backends, receiver ----------------------------------------

router_bird_conf "$net" "$port" plain 2 65002 otel 3 65003 >"$tmp/bird.conf"
bird -f -c "$tmp/bird.conf" -s "$tmp/bird.ctl" -P "$tmp/bird.pid" >/dev/null 2>"$tmp/bird.err" &
pids+=("$!")
wait_ctl "$tmp/bird.ctl"

# start_listener NAME CMD...: runs CMD in the background (stdout to
# $tmp/NAME.out) and waits until FILE $tmp/NAME.ready is not empty.
start_listener() {
  local name=$1 p i
  shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  p=$!
  pids+=("$p")
  for i in $(seq 1 "$((deadline_s * 20))"); do
    [ -s "$tmp/$name.ready" ] && return 0
    alive "$p" || break
    sleep 0.05
  done
  echo "otel-cost: $name did not start" >&2
  cat "$tmp/$name.err" >&2
  return 1
}

for v in plain otel; do
  start_listener "backend-$v" "$py" "$helper" backend "$net.1${octet[$v]}" 8081 "$tmp/backend-$v.ready"
done

# The collector: one line "t body_bytes head_bytes points" per request.
# Run from a file, not in a function: the PID recorded must be python's.
cat >"$tmp/receiver.py" <<'EOF'
import socket, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        head = len(self.requestline) + 2 + len(self.headers.as_bytes())
        req = ExportMetricsServiceRequest()
        req.ParseFromString(body)  # a request that does not decode ends the receiver
        points = sum(len(getattr(m, m.WhichOneof("data")).data_points)
                     for rm in req.resource_metrics for sm in rm.scope_metrics for m in sm.metrics)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
        print(f"{time.monotonic():.3f} {len(body)} {head} {points}", flush=True)

class Server(HTTPServer):
    address_family = socket.AF_INET
    allow_reuse_address = True

srv = Server((sys.argv[1], int(sys.argv[2])), Handler)
with open(sys.argv[3], "w") as f:
    f.write("listening\n")
srv.serve_forever()
EOF
start_listener receiver "$py" "$tmp/receiver.py" "${recv%:*}" "${recv#*:}" "$tmp/receiver.ready"

# --- the daemons -----------------------------------------------------------

# pathosd_conf VARIANT N: N VIPs with a tcp check every 1 s (rise 1); the
# otel variant exports to the receiver every OTEL_INTERVAL s.
pathosd_conf() {
  local v=$1 n=$2 o=${octet[$1]} otel=""
  # Metrics only: the receiver decodes metrics requests, and traces and
  # logs (on by default with an endpoint) are other costs.
  [ "$v" = otel ] && otel="\"otel\": { \"endpoint\": \"http://$recv\", \"service_name\": \"bench\", \"metrics\": { \"interval\": \"${interval}s\" }, \"traces\": { \"enabled\": false }, \"logs\": { \"enabled\": false } },"
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": 6500$o, "router_id": "$net.$o", "local_address": "$net.$o" },
  "bgp": {
    "listen_port": -1,
    "neighbors": [ { "name": "router", "address": "$net.1", "port": $port, "peer_asn": 65000, "enable_multihop": true } ]
  },
  "api": { "listen": "$net.$o:59180" },
  "logging": { "level": "warn" },
  $otel
  "vips": [
EOF
  prefixes "$n" "$o" | awk -v c="\"check\": { \"type\": \"tcp\", \"interval\": \"1s\", \"rise\": 1, \"tcp\": { \"host\": \"$net.1$o\", \"port\": 8081 } }" \
    '{ printf "%s    { \"name\": \"v%d\", \"prefix\": \"%s\", %s }", (NR > 1 ? ",\n" : ""), NR, $0, c } END { print "" }'
  echo "  ]"
  echo "}"
}

# Routes BIRD imported from protocol $1 (0 while it is down).
imported() {
  "$birdc" -s "$tmp/bird.ctl" show protocols all "$1" 2>/dev/null | awk '/Routes:/ { print $2; f = 1 } END { if (!f) print 0 }'
}

# Waits until protocol $1 is in Passive again (BIRD's error wait after the
# last run's session ended).
router_ready() {
  local i
  for i in $(seq 1 "$((deadline_s * 20))"); do
    "$birdc" -s "$tmp/bird.ctl" show protocols "$1" 2>/dev/null | grep -q Passive && return 0
    sleep 0.05
  done
  echo "otel-cost: router protocol $1 not Passive after ${deadline_s} s" >&2
  return 1
}

# ns the daemon's own thread (the main one, where checks, BGP and the
# exporter run) has been on a CPU: the first field of its schedstat.
thread_ns() { awk '{ print $1 }' "/proc/$1/task/$1/schedstat"; }

# "time runs" of daemon $1 with $2 VIPs: now, and the probes its first
# and last VIP have run (total_ok + total_fail), from /api/v1/vips/NAME:
# two small answers, not /metrics (at 1,000 VIPs, rendering /metrics would
# be the daemon's peak memory).
check_counts() {
  local v=$1 n=$2 t runs=0 name c
  t=$EPOCHREALTIME
  for name in v1 "v$n"; do
    c=$(curl -sf --max-time 5 "http://$net.${octet[$v]}:59180/api/v1/vips/$name" |
      "$py" -c 'import json, sys; c = json.load(sys.stdin)["checks"][0]; print(c["total_ok"] + c["total_fail"])')
    runs=$((runs + c))
  done
  echo "$t $runs"
}

mean_col() { awk -v c="$2" '{ s += $c; k++ } END { if (k) printf "%.0f", s / k; else print "NA" }' "$1"; }

one_run() {
  local n=$1 r=$2 v i ok order c1 lines0 lines1 reqs rss hwm t0 a0 t1 a1
  declare -A d=() c0=() m0=() k0=()
  for v in plain otel; do router_ready "$v"; done
  # Which daemon starts first alternates from run to run.
  order="plain otel"
  [ $((r % 2)) = 0 ] && order="otel plain"
  for v in $order; do
    pathosd_conf "$v" "$n" >"$tmp/$v-$n-$r.json"
    "$pathosd" run --config "$tmp/$v-$n-$r.json" >/dev/null 2>"$tmp/$v-$n-$r.log" &
    d[$v]=$!
    pids+=("$!")
  done
  # Every VIP healthy and announced by both.
  ok=0
  for i in $(seq 1 "$((deadline_s * 10))"); do
    if [ "$(imported plain)" = "$n" ] && [ "$(imported otel)" = "$n" ]; then ok=1; break; fi
    for v in plain otel; do alive "${d[$v]}" || { echo "otel-cost: pathosd ($v) died" >&2; tail -5 "$tmp/$v-$n-$r.log" >&2; return 1; }; done
    sleep 0.1
  done
  [ "$ok" = 1 ] || { echo "otel-cost: $n VIPs not all in BIRD within ${deadline_s} s (plain $(imported plain), otel $(imported otel))" >&2; return 1; }
  sleep "$warmup"
  lines0=$(wc -l <"$tmp/receiver.out")
  [ "$lines0" -gt 0 ] || { echo "otel-cost: no export reached the receiver in the warm-up" >&2; return 1; }
  for v in plain otel; do
    c0[$v]=$("$py" "$helper" cpu "${d[$v]}")
    m0[$v]=$(thread_ns "${d[$v]}")
    k0[$v]=$(check_counts "$v" "$n")
  done
  sleep "$window"
  for v in plain otel; do
    c1=$("$py" "$helper" cpu "${d[$v]}")
    record thread "$v" "$n" "$(awk -v a="${m0[$v]}" -v b="$(thread_ns "${d[$v]}")" -v w="$window" 'BEGIN { printf "%.1f", (b - a) / 1e6 * 60 / w }')"
    record cpu "$v" "$n" "$(awk -v a="${c0[$v]}" -v b="$c1" -v w="$window" 'BEGIN { printf "%.1f", (b - a) / 1e6 * 60 / w }')"
    read -r rss hwm _ <<<"$("$py" "$helper" mem "${d[$v]}")"
    record rss "$v" "$n" "$rss"
    record hwm "$v" "$n" "$hwm"
    read -r t0 a0 <<<"${k0[$v]}"
    read -r t1 a1 <<<"$(check_counts "$v" "$n")"
    record runs "$v" "$n" "$(awk -v a="$a0" -v b="$a1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.1f", (b - a) / 2 * 60 / (e - s) }')"
  done
  lines1=$(wc -l <"$tmp/receiver.out")
  sed -n "$((lines0 + 1)),${lines1}p" "$tmp/receiver.out" >"$tmp/window-$n-$r"
  reqs=$((lines1 - lines0))
  [ "$reqs" -gt 0 ] || { echo "otel-cost: no export in the window" >&2; return 1; }
  # Requests per OTEL_INTERVAL, from the receiver's clock: (k - 1) gaps
  # between the first and the last.
  [ "$reqs" -ge 2 ] || { echo "otel-cost: fewer than 2 exports in the window: make WINDOW longer" >&2; return 1; }
  record reqs otel "$n" "$(awk -v i="$interval" 'NR == 1 { a = $1 } { b = $1; k++ } END { printf "%.2f", (k - 1) * i / (b - a) }' "$tmp/window-$n-$r")"
  # An export may be several requests (one per 256 KiB): they come
  # together, the next export an interval later.
  record exports otel "$n" "$(awk -v i="$interval" 'NR == 1 || $1 - t > i / 2 { k++ } { t = $1 } END { print k }' "$tmp/window-$n-$r")"
  record body otel "$n" "$(mean_col "$tmp/window-$n-$r" 2)"
  record head otel "$n" "$(mean_col "$tmp/window-$n-$r" 3)"
  record points otel "$n" "$(mean_col "$tmp/window-$n-$r" 4)"
  for v in plain otel; do
    grep -E 'WARN|ERROR' "$tmp/$v-$n-$r.log" | head -3 >&2 || true
    stop "${d[$v]}"
    forget "${d[$v]}"
  done
  echo "   $n VIPs, run $r: done" >&2
}

for n in "${counts[@]}"; do
  for r in $(seq 1 "$runs"); do
    echo "== $n VIPs, run $r of $runs: ${warmup} s warm-up, ${window} s window" >&2
    one_run "$n" "$r"
  done
done

# --- the table -------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "NA"; else print v[int((NR + 1) / 2)] }'; }
value() { awk -v k="$1|$2|$3" '$1 == k { print $2 }' "$results" | median; }
all() { awk -v k="$1|$2|$3" '$1 == k { print $2 }' "$results" | paste -sd / -; }

echo
echo "$("$pathosd" --version 2>/dev/null | paste -sd ' ' - || echo 'pathosd ?') ($(git rev-parse --short HEAD 2>/dev/null || echo '?')), $(nproc) CPUs, RUNS=$runs WINDOW=$window WARMUP=$warmup OTEL_INTERVAL=$interval"
echo "medians of $runs runs; each run's value after the table"
echo
echo "| VIPs | CPU ms/60 s, no otel | with otel | ratio | RSS KiB, no otel | with otel | difference | peak RSS KiB, no otel | with otel | request bytes (body + head) | data points | requests per export | CPU per export, ms: process / daemon thread |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in "${counts[@]}"; do
  cp=$(value cpu plain "$n")
  co=$(value cpu otel "$n")
  rp=$(value rss plain "$n")
  ro=$(value rss otel "$n")
  # CPU one export costs (the process; the daemon's thread), per run
  # (same window), then the median.
  per() {
    paste -d ' ' <(awk -v k="$1|plain|$n" '$1 == k { print $2 }' "$results") \
      <(awk -v k="$1|otel|$n" '$1 == k { print $2 }' "$results") \
      <(awk -v k="exports|otel|$n" '$1 == k { print $2 }' "$results") |
      awk -v w="$window" '{ printf "%.2f\n", ($2 - $1) * w / 60 / $3 }' | median
  }
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s + %s | %s | %s | %s |\n' "$n" "$cp" "$co" \
    "$(awk -v a="$co" -v b="$cp" 'BEGIN { printf "%.2f", a / b }')" \
    "$rp" "$ro" "$((ro - rp))" "$(value hwm plain "$n")" "$(value hwm otel "$n")" \
    "$(value body otel "$n")" "$(value head otel "$n")" "$(value points otel "$n")" "$(value reqs otel "$n")" "$(per cpu) / $(per thread)"
done
echo
echo "| VIPs | probes per VIP per 60 s, no otel | with otel |"
echo "|---:|---:|---:|"
for n in "${counts[@]}"; do
  printf '| %s | %s | %s |\n' "$n" "$(value runs plain "$n")" "$(value runs otel "$n")"
done
echo
for n in "${counts[@]}"; do
  echo "$n VIPs per run: probes per VIP per 60 s $(all runs plain "$n") / $(all runs otel "$n")"
  echo "$n VIPs per run: CPU no otel $(all cpu plain "$n"), with $(all cpu otel "$n"); daemon thread $(all thread plain "$n") / $(all thread otel "$n"); RSS $(all rss plain "$n") / $(all rss otel "$n"); peak RSS $(all hwm plain "$n") / $(all hwm otel "$n"); exports in the window $(all exports otel "$n")"
done
