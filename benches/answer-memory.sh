#!/usr/bin/env bash
# What a large answer costs the daemon's memory: RSS before, peak (VmHWM)
# during, RSS after, for GET /status, GET /metrics and a page of
# /status?limit=1000, one client and several at once, at 1,000 and 10,000
# VIPs (`always` VIPs, the largest status, and VIPs with one tcp check every
# 30 s against a backend of their own); the OTLP metrics export to a local
# receiver that answers 200; and, with a real ubusd, ubus `status` pages.
# Each measurement has a daemon of its own, and the peak is that process's:
# its VmHWM is reset before the request (/proc/PID/clear_refs), so the
# start's own peak is not counted. `bytes` is the answer as the client got
# it (HTTP: with its head and chunk lines; ubus: the `ubus` tool's JSON).
# Prints a table for docs/performance.md ("Large answers").
#
#   bash benches/answer-memory.sh [COUNTS…]        # default: 1000 10000
#   PATHOSD=target/cross/out/x86_64-unknown-linux-musl/default/pathosd \
#     bash benches/answer-memory.sh                # the static musl build
#   CLIENTS=8 KINDS="always" bash benches/answer-memory.sh 10000
#   UBUSD=…/ubusd UBUS=…/ubus [LD_LIBRARY_PATH=…] bash benches/answer-memory.sh
#
# PATHOSD (default target/release/pathosd) is the daemon measured; CLIENTS
# (4) the clients at once; KINDS ("always tcp") the VIPs. Without UBUSD and
# UBUS the ubus rows are left out (said so on stderr): no ubusd is in
# Debian (benches/status-scale.sh says how to build OpenWrt's).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "answer-memory: $tool not found" >&2; exit 1; }
done
PATHOSD=${PATHOSD:-target/release/pathosd}
[ -x "$PATHOSD" ] || cargo build --release --locked --quiet
CLIENTS=${CLIENTS:-4}
KINDS=${KINDS:-always tcp}
COUNTS=("$@")
[ "${#COUNTS[@]}" -gt 0 ] || COUNTS=(1000 10000)
UBUS_ON=0
if [ -n "${UBUSD:-}" ] && [ -n "${UBUS:-}" ]; then
  UBUS_ON=1
else
  echo "answer-memory: UBUSD and UBUS not set: no ubus rows" >&2
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-answer-memory.XXXXXX")
trap 'cleanup_pids; rm -rf "$TMP"' EXIT
IP=127.0.$((RANDOM % 200 + 20)).$((RANDOM % 200 + 20))
API_PORT=$((20000 + RANDOM % 20000))
CHECK_PORT=$((API_PORT + 1))
OTLP_PORT=$((API_PORT + 2))
SOCK=$TMP/ubus.sock

if [ "$UBUS_ON" = 1 ]; then
  start_ubusd "$SOCK" answer-memory || exit 1
fi

# The checks' backend (accepts and closes) and the OTLP receiver (reads a
# request, answers 200, counts the bytes), each a process of its own.
start_accept_close "$IP" "$CHECK_PORT"
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        with open(sys.argv[3], "a") as f:
            f.write("%d\n" % n)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
' "$IP" "$OTLP_PORT" "$TMP/otlp-requests" &
pids+=($!)

# N VIPs of KIND as a JSON config; with INTERVAL, the OTLP metrics export
# that often (else none).
write_config() { # N KIND FILE [INTERVAL]
  python3 - "$1" "$2" "$IP" "$API_PORT" "$CHECK_PORT" "$OTLP_PORT" "$SOCK" "$UBUS_ON" "${4:-}" >"$3" <<'EOF'
import json, sys
n, kind, ip, api, check, otlp, sock, ubus, interval = sys.argv[1:]
vips = []
for i in range(int(n)):
    v = {"name": "v%05d" % i,
         "prefix": "10.%d.%d.%d/32" % (200 + i // 65536, (i // 256) % 256, i % 256)}
    if kind == "always":
        v["always"] = True
    else:
        v["checks"] = [{"type": "tcp", "tcp": {"host": ip, "port": int(check)},
                        "interval": "30s", "timeout": "1s"}]
    vips.append(v)
cfg = {
    "schema": "v1",
    "router": {"asn": 65001, "router_id": "10.0.0.1"},
    # A neighbor nobody answers: the VIPs' state needs no session.
    "bgp": {"listen_port": -1, "neighbors": [{"name": "r", "address": ip, "port": 9, "peer_asn": 65000}]},
    "api": {"listen": "%s:%s" % (ip, api), "ubus_socket": sock if ubus == "1" else ""},
    "logging": {"level": "warn", "syslog": False},
    "vips": vips}
if interval:
    cfg["otel"] = {"endpoint": "http://%s:%s" % (ip, otlp), "metrics": {"interval": interval},
                   "traces": {"enabled": False}, "logs": {"enabled": False}}
print(json.dumps(cfg))
EOF
}

# One measurement: RSS before, VmHWM reset, CLIENTS copies of the request
# at once, the peak, RSS a second later. Prints "bytes before peak after ms".
measure() { # PID CLIENTS KIND(http|ubus) WHAT
  python3 - "$@" "$IP" "$API_PORT" "${UBUS:-}" "$SOCK" <<'EOF'
import socket, subprocess, sys, threading, time
pid, clients, kind, what, ip, port, ubus, sock = sys.argv[1:]
pid, clients = int(pid), int(clients)
def vm(field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit("no %s in /proc/%d/status" % (field, pid))
def http():
    s = socket.create_connection((ip, int(port)), timeout=120)
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n" % (what, ip, port)).encode())
    n = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        n += len(b)
    s.close()
    return n
def ubus_call():
    out = subprocess.run([ubus, "-s", sock, "call", "pathosd", "status", what],
                         capture_output=True, check=True, timeout=120).stdout
    return len(out)
call = http if kind == "http" else ubus_call
before = vm("VmRSS")
open("/proc/%d/clear_refs" % pid, "w").write("5")
sizes = []
errors = []
def run():
    try:
        sizes.append(call())
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=run) for _ in range(clients)]
t0 = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
ms = (time.monotonic() - t0) * 1000
if errors:
    raise SystemExit("answer-memory: %s" % errors[0])
peak = vm("VmHWM")
time.sleep(1)
print(max(sizes), before, peak, vm("VmRSS"), "%.0f" % ms)
EOF
}

# Starts the daemon on CONFIG and waits until it is up and (tcp) every check
# has reported once (bounded: 120 s); sets `daemon`.
start() { # CONFIG N
  "$PATHOSD" run --config "$1" >"$TMP/daemon.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  local ready=0
  for _ in $(seq 1 1200); do
    if curl -sf --max-time 5 "http://$IP:$API_PORT/status?limit=0" >"$TMP/counts" &&
      python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["vip_counts"]; sys.exit(0 if c["healthy"] == c["total"] == int(sys.argv[2]) else 1)' "$TMP/counts" "$2"; then
      ready=1
      break
    fi
    sleep 0.1
  done
  [ "$ready" = 1 ] || { echo "answer-memory: $2 VIPs never all healthy" >&2; tail -5 "$TMP/daemon.log" >&2; exit 1; }
}

# Waits (bounded: 60 s) for an OTLP export to have arrived whole: requests
# came, and none for a second since.
export_done() {
  for _ in $(seq 1 600); do
    sleep 0.1
    if [ -s "$TMP/otlp-requests" ] && [ -n "$(find "$TMP/otlp-requests" -not -newermt '-1 seconds')" ]; then
      return 0
    fi
  done
  echo "answer-memory: no OTLP export" >&2
  exit 1
}

vm() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

printf '| build | VIPs | request | clients | bytes | RSS before KiB | peak KiB (+) | RSS after KiB (+) | time ms |\n'
printf '|---|---|---|---:|---:|---:|---:|---:|---:|\n'
build=$(file -b "$PATHOSD" | grep -q 'statically linked' && echo musl || echo glibc)
for kind in $KINDS; do
  for n in "${COUNTS[@]}"; do
    label="$n ($kind)"
    row() { # REQUEST CLIENTS BYTES BEFORE PEAK AFTER MS
      printf '| %s | %s | %s | %s | %s | %s | %s (+%s) | %s (+%s) | %s |\n' \
        "$build" "$label" "$1" "$2" "$3" "$4" "$5" $(($5 - $4)) "$6" $(($6 - $4)) "$7"
    }
    cfg=$TMP/pathosd-$kind-$n.json
    write_config "$n" "$kind" "$cfg"
    # A daemon of its own for each measurement: what one left in the heap
    # (before the answers were streamed, tens of MB) is not the next one's.
    requests=(http:/status http:/metrics 'http:/status?limit=1000')
    [ "$UBUS_ON" = 1 ] && requests+=('ubus:{"limit":1000}')
    for r in "${requests[@]}"; do
      how=${r%%:*} what=${r#*:}
      for c in 1 "$CLIENTS"; do
        start "$cfg" "$n"
        sleep 2
        read -r b before peak after ms < <(measure "$daemon" "$c" "$how" "$what")
        if [ "$how" = http ]; then
          row "\`GET $what\`" "$c" "$b" "$before" "$peak" "$after" "$ms"
        else
          row "ubus \`status $what\`" "$c" "$b" "$before" "$peak" "$after" "$ms"
        fi
        stop "$daemon"
        forget "$daemon"
      done
    done

    # The OTLP metrics export, every 10 s: the peak over the second one
    # (the first shows the daemon has settled).
    write_config "$n" "$kind" "$cfg" 10s
    : >"$TMP/otlp-requests"
    start "$cfg" "$n"
    export_done
    before=$(vm "$daemon" VmRSS)
    echo 5 >"/proc/$daemon/clear_refs"
    : >"$TMP/otlp-requests"
    t0=$(now)
    export_done
    t1=$(now)
    peak=$(vm "$daemon" VmHWM)
    after=$(vm "$daemon" VmRSS)
    reqs=$(wc -l <"$TMP/otlp-requests")
    bytes=$(awk '{ s += $1 } END { print s }' "$TMP/otlp-requests")
    # The time is from the end of the export before, about the interval.
    row "OTLP metrics export, $reqs requests" 1 "$bytes" "$before" "$peak" "$after" \
      "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
    stop "$daemon"
    forget "$daemon"
  done
done
