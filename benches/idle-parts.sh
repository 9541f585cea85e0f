#!/usr/bin/env bash
# What one VIP's idle CPU is made of: announcers with one route each, side
# by side against one BIRD router on loopback in one run, at two hold
# times, so that the parts of compare.sh's "1 HTTP-checked VIP" figure can
# be told apart on the same machine in the same minute:
#   bird       BIRD announcing one static route, no checks (the reference);
#   always     pathosd with one `always` VIP: the BGP session alone;
#   http       pathosd with one HTTP-checked VIP at 1 s (the default check:
#              a new connection per probe);
#   keepalive  the same with `keep_alive: true` (one connection reused);
# and two floors, one C program (two modes) that runs during the window:
#   floor      a loop that only sleeps, waking WAKES times a second
#              (nanosleep): the cost of a thread waking up at all;
#   HTTP floor the default check's exchange once a second with blocking
#              sockets (new connection, GET, read, close): what any prober
#              pays for it on this machine, with no BGP and no reactor.
#
# Prints, per announcer and hold time, CPU per 60 s, and per thread its
# wake-ups (voluntary context switches) per second and CPU per 60 s
# (/proc/PID/task/TID/status and schedstat), and the ratio to BIRD at the
# same hold time. docs/performance.md has a measured table and what it says.
#
# Layout on 127.212.0.0/16: the router BIRD 127.212.0.1 port 1179 (passive,
# one session per announcer), announcer i at 127.212.0.(10+i) with route
# 10.212.i.1/32, the HTTP backend (benches/compare_helper.py) 127.212.1.2:8080.
# Every process it starts is stopped by PID at exit; every wait has a
# deadline. Not part of CI: it measures a shared machine.
#
# usage: benches/idle-parts.sh
# env: IDLE_SECS=60 (the window; CPU is reported per 60 s), HOLDS="3 90",
#      CASES="bird always http keepalive", WAKES=2,
#      PATHOSD=FILE (default: the worktree's release build, built first).
set -eEuo pipefail
trap 'echo "idle-parts.sh: line $LINENO: exit status $?" >&2' ERR
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

idle_secs=${IDLE_SECS:-60}
read -r -a holds <<<"${HOLDS:-3 90}"
read -r -a cases <<<"${CASES:-bird always http keepalive}"
wakes=${WAKES:-2}
for t in bird birdc python3 cc; do
  command -v "$t" >/dev/null || { echo "idle-parts.sh: $t not found" >&2; exit 1; }
done
if [ -z "${PATHOSD:-}" ]; then
  cargo build --release --quiet
  PATHOSD=target/release/pathosd
fi
[ -x "$PATHOSD" ] || { echo "idle-parts.sh: $PATHOSD is not executable" >&2; exit 1; }

tmp=$(mktemp -d /tmp/idle-parts.XXXXXX)
finish() {
  cleanup_pids
  rm -rf "$tmp"
}
trap finish EXIT

router=127.212.0.1
backend=127.212.1.2
# The announcers: "case hold" per line, announcer i is line i.
list=()
for h in "${holds[@]}"; do
  for c in "${cases[@]}"; do
    case $c in bird | always | http | keepalive) ;; *) echo "unknown case $c" >&2; exit 2 ;; esac
    list+=("$c $h")
  done
done
[ "${#list[@]}" -le 200 ] || { echo "too many announcers" >&2; exit 2; }

# The router: one passive session per announcer, each with the announcer's
# hold time (the smaller of the two offers is the session's, RFC 4271 §4.2).
{
  echo "router id $router;"
  echo "protocol device { }"
  i=0
  for x in "${list[@]}"; do
    i=$((i + 1))
    read -r _ h <<<"$x"
    cat <<EOF
protocol bgp a$i {
  local $router port 1179 as 65000;
  neighbor 127.212.0.$((10 + i)) port 1179 as $((65100 + i));
  multihop; strict bind on; passive on; hold time $h;
  graceful restart off;
  ipv4 { import all; export none; };
}
EOF
  done
} >"$tmp/router.conf"
bird -f -c "$tmp/router.conf" -s "$tmp/router.ctl" -P "$tmp/router.pid" 2>"$tmp/router.err" &
pids+=("$!")
wait_ctl "$tmp/router.ctl"
python3 benches/compare_helper.py backend "$backend" 8080 "$tmp/backend.stamp" 2>"$tmp/backend.err" &
pids+=("$!")
# The backend writes its stamp once it listens (5 s at most).
for _ in $(seq 1 50); do
  [ -s "$tmp/backend.stamp" ] && break
  sleep 0.1
done
[ -s "$tmp/backend.stamp" ] || { echo "idle-parts.sh: the HTTP backend did not start:" >&2; cat "$tmp/backend.err" >&2; exit 1; }

# The floors, one C program. `floor sleep RATE SECS`: RATE nanosleeps a
# second for SECS s, then its CPU per wake-up (µs) and per 60 s (ms).
# `floor http ADDR PORT SECS`: the default check's exchange once a second
# with blocking sockets (socket, connect, request, read the status line,
# close, sleep), then its CPU per 60 s (ms) and the answers counted. The
# CPU counts from after the first round (process CPU clock).
cat >"$tmp/floor.c" <<'EOF'
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static double cpu_ns(void) {
  struct timespec c;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
  return c.tv_sec * 1e9 + c.tv_nsec;
}
/* One GET on a new connection: 1 if the status line says 200. */
static int exchange(const struct sockaddr_in *sa, const char *req, int len) {
  char buf[4096];
  int ok = 0, s = socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0 && connect(s, (const struct sockaddr *)sa, sizeof *sa) == 0 && write(s, req, len) == len &&
      read(s, buf, sizeof buf) > 12 && memcmp(buf, "HTTP/1.1 200", 12) == 0)
    ok = 1;
  if (s >= 0) close(s);
  return ok;
}
int main(int argc, char **argv) {
  int http = argc == 5 && strcmp(argv[1], "http") == 0;
  long rate = http ? 1 : argc == 4 ? atol(argv[2]) : 0, secs = atol(argv[argc - 1]);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(http ? atoi(argv[3]) : 0)};
  if (rate < 1 || rate > 1000 || secs < 1 || secs > 3600 || (http && inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1))
    return 2;
  char req[256];
  int len = http ? snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n", argv[2], argv[3]) : 0;
  struct timespec ts = {rate == 1, rate == 1 ? 0 : 1000000000L / rate};
  double a = 0;
  long ok = 0, n = rate * secs;
  for (long i = 0; i <= n; i++) {
    if (i == 1) a = cpu_ns();
    if (http) ok += exchange(&sa, req, len);
    nanosleep(&ts, 0);
  }
  double used = cpu_ns() - a;
  if (http)
    printf("%.1f %ld\n", used / 1e6 * 60 / secs, ok);
  else
    printf("%.1f %.1f\n", used / 1e3 / n, used / 1e6 * 60 / secs);
  return 0;
}
EOF
cc -O2 -o "$tmp/floor" "$tmp/floor.c"

declare -A pid
i=0
for x in "${list[@]}"; do
  i=$((i + 1))
  read -r c h <<<"$x"
  a=127.212.0.$((10 + i))
  d=$tmp/a$i
  mkdir -p "$d"
  if [ "$c" = bird ]; then
    cat >"$d/bird.conf" <<EOF
router id $a;
protocol device { }
protocol static { ipv4; route 10.212.$i.1/32 blackhole; }
protocol bgp upstream {
  local $a port 1179 as $((65100 + i));
  neighbor $router port 1179 as 65000;
  multihop; strict bind on; hold time $h;
  connect retry time 1; connect delay time 0;
  ipv4 { import none; export all; };
}
EOF
    bird -f -c "$d/bird.conf" -s "$d/bird.ctl" -P "$d/bird.pid" 2>"$d/log" &
  else
    check='"always": true'
    if [ "$c" != always ]; then
      ka=false
      [ "$c" = keepalive ] && ka=true
      check='"check": {"type": "http", "interval": "1s", "timeout": "500ms", "rise": 1, "fall": 1, "http": {"url": "http://'$backend':8080/", "keep_alive": '$ka'}}'
    fi
    cat >"$d/p.json" <<EOF
{"schema": "v1", "router": {"asn": $((65100 + i)), "router_id": "$a", "local_address": "$a"},
 "bgp": {"listen_port": -1, "hold_time": "${h}s",
         "neighbors": [{"name": "router", "address": "$router", "port": 1179, "peer_asn": 65000, "enable_multihop": true}]},
 "api": {"listen": ""}, "logging": {"level": "warn"},
 "vips": [{"name": "v1", "prefix": "10.212.$i.1/32", $check}]}
EOF
    "$PATHOSD" run --config "$d/p.json" >"$d/log" 2>&1 &
  fi
  pids+=("$!")
  pid[$i]=$!
done

# Every session Established, and each announcer's route at the router.
n=${#list[@]}
up=0
for _ in $(seq 1 300); do
  up=$(birdc -s "$tmp/router.ctl" show protocols 2>/dev/null | grep -c Established || true)
  routes=$(birdc -s "$tmp/router.ctl" show route count 2>/dev/null | awk '/routes/ {print $1; exit}')
  [ "$up" = "$n" ] && [ "${routes:-0}" = "$n" ] && break
  sleep 0.1
done
if [ "$up" != "$n" ] || [ "${routes:-0}" != "$n" ]; then
  echo "idle-parts.sh: $up of $n sessions, ${routes:-0} routes after 30 s" >&2
  for i in $(seq 1 "$n"); do tail -n 3 "$tmp/a$i/log" >&2 || true; done
  exit 1
fi
# Past the start: first UPDATEs, first probes.
sleep 3

# snap PID: "cpu_ns name:wakes:cpu_ns ..." (one field per thread).
snap() {
  local out t
  out=$(python3 benches/compare_helper.py cpu "$1")
  for t in /proc/"$1"/task/*; do
    out="$out $(tr -d ' :' <"$t/comm"):$(awk '/^voluntary_ctxt/ {print $2}' "$t/status"):$(cut -d' ' -f1 "$t/schedstat")"
  done
  echo "$out"
}
declare -A s0
for i in $(seq 1 "$n"); do s0[$i]=$(snap "${pid[$i]}"); done
"$tmp/floor" sleep "$wakes" "$idle_secs" >"$tmp/floor.out" &
floor_pid=$!
pids+=("$floor_pid")
"$tmp/floor" http "$backend" 8080 "$idle_secs" >"$tmp/floor_http.out" &
floor_http_pid=$!
pids+=("$floor_http_pid")
sleep "$idle_secs"
for i in $(seq 1 "$n"); do echo "$i|${list[$((i - 1))]}|${s0[$i]}|$(snap "${pid[$i]}")"; done >"$tmp/snaps"
# Both end on their own within a few seconds (bounded loops).
wait "$floor_pid" "$floor_http_pid"
forget "$floor_pid"
forget "$floor_http_pid"

echo "$("$PATHOSD" --version 2>/dev/null | tr '\n' ' ' || echo 'pathosd ?')($(git rev-parse --short HEAD 2>/dev/null || echo '?')), $(nproc) CPUs, IDLE_SECS=$idle_secs, $(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
read -r per_wake floor_ms <"$tmp/floor.out"
echo "floor: a thread that only sleeps, $wakes wake-ups a second: $per_wake µs per wake-up, $floor_ms ms per 60 s"
read -r http_ms http_ok <"$tmp/floor_http.out"
echo "HTTP floor: one blocking exchange on a new connection a second (C, no BGP): $http_ms ms per 60 s ($http_ok answers)"
python3 - "$idle_secs" "$tmp/snaps" <<'EOF'
import sys
secs = float(sys.argv[1])
rows = []
for line in open(sys.argv[2]):
    i, what, a, b = line.rstrip("\n").split("|")
    case, hold = what.split()
    a, b = a.split(), b.split()
    def threads(fields):
        t = {}
        for f in fields:
            name, w, c = f.split(":")
            w0, c0 = t.get(name, (0, 0))
            t[name] = (w0 + int(w or 0), c0 + int(c or 0))
        return t
    ta, tb = threads(a[1:]), threads(b[1:])
    parts = []
    for name, (w, c) in tb.items():
        w0, c0 = ta.get(name, (0, 0))
        parts.append(f"{name} {(w - w0) / secs:.2f}/s {(c - c0) / 1e6 * 60 / secs:.1f} ms")
    rows.append((case, int(hold), (int(b[0]) - int(a[0])) / 1e6 * 60 / secs, ", ".join(parts)))
bird = {h: cpu for case, h, cpu, _ in rows if case == "bird"}
print("| announcer | hold s | CPU ms / 60 s | × BIRD | per thread: wake-ups/s, CPU ms / 60 s |")
print("|---|---:|---:|---:|---|")
for case, h, cpu, parts in rows:
    ratio = f"{cpu / bird[h]:.2f}" if bird.get(h) else "-"
    print(f"| {case} | {h} | {cpu:.1f} | {ratio} | {parts} |")
EOF
