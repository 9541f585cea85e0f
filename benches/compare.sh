#!/usr/bin/env bash
# pathosd against the announcers Debian ships, all in one run against one
# BIRD router on loopback: BIRD (a `protocol static`), gobgpd (routes added
# through its gobgp CLI) and ExaBGP with its healthcheck program (the one in
# Debian's exabgp package, `python3 -m exabgp healthcheck`, running curl).
# Prints, per figure, each peer's value, pathosd's ratio to each of them,
# the target set for it (idle CPU, memory, convergence) and pass/fail. docs/performance.md has the method,
# the knobs and a measured table.
#
# Layout on 127.150.0.0/24: the router BIRD .1 (passive, port 1179, its own
# config, control socket and log in the temp dir), pathosd .2 (tcp-checked
# or `always` VIPs), BIRD .3, gobgpd .4, ExaBGP .5, a second pathosd .6 (one
# HTTP-checked VIP); the check backends listen on 127.150.1.1:8081 (tcp
# checks) and 127.150.1.2:8080 (HTTP checks). Each announcer has its own
# second octet in 10.0.0.0/8 (pathosd 10.2, BIRD 10.3, gobgpd 10.4, ExaBGP
# 10.5, the HTTP pathosd 10.6).
#
# Times come from the router's log: `debug { states, routes }` and
# `timeformat log "%s.%6f"` stamp every route it adds or removes and every
# session it establishes to the microsecond; the script records the start
# of each action (EPOCHREALTIME, same clock) and polls the log every 10 ms
# only to know when to go on. CPU and memory: benches/compare_helper.py
# (process CPU clocks, /proc/PID/status, smaps_rollup), summed over the
# announcer and its children. UPDATE counts: a tcpdump capture of the whole
# run, reassembled per TCP direction.
#
# Every process it starts is stopped by PID at exit (trap); every wait has a
# deadline. Not part of CI: it takes minutes and measures a shared machine.
#
# usage: benches/compare.sh
# env: IDLE_SECS=60 (idle CPU window; CPU is reported per 60 s whatever the
#      window), RUNS=3 (repeats of the timing figures; medians),
#      COUNTS="1 100 1000" (tcp-checked VIP counts), ALWAYS_N=10000,
#      HOLD=3 (hold time of every session, s), DEADLINE=60 (s per wait),
#      HTTP_KEEP_ALIVE=0 (1: the HTTP check reuses its connection),
#      PEERS="bird gobgpd exabgp" (the peers besides pathosd),
#      PHASES="size timing levels always" (a subset for digging),
#      PATHOSD_LOG=warn, KEEP=1 (keep the temp dir with every log),
#      PATHOSD=FILE (run this pathosd binary instead of building the
#      worktree's release build).
set -eEuo pipefail
# A failing command ends the run: say where instead of ending silently.
trap 'echo "compare.sh: line $LINENO: exit status $?" >&2' ERR
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
# shellcheck source=scripts/apt.sh
. scripts/apt.sh

idle_secs=${IDLE_SECS:-60}
runs=${RUNS:-3}
read -r -a counts <<<"${COUNTS:-1 100 1000}"
always_n=${ALWAYS_N:-10000}
hold=${HOLD:-3}
# The HTTP check's keep_alive (docs/checks.md): 0 (the default) or 1.
case ${HTTP_KEEP_ALIVE:-0} in 0) http_keep_alive=false ;; 1) http_keep_alive=true ;; *) echo "HTTP_KEEP_ALIVE must be 0 or 1" >&2; exit 2 ;; esac
deadline_s=${DEADLINE:-60}
read -r -a peers <<<"${PEERS:-bird gobgpd exabgp}"
phases=" ${PHASES:-size timing levels always} "
birdc=birdc
bird=/usr/sbin/bird
py=/usr/bin/python3 # Debian's: ExaBGP lives in its dist-packages
helper=$PWD/benches/compare_helper.py

[ "$always_n" -le 65536 ] || { echo "ALWAYS_N must be <= 65536 (one second octet per announcer)" >&2; exit 2; }

# Everything comes from Debian; a missing tool is a failure, not a skip.
if [ "$(id -u)" = 0 ]; then
  apt_ensure bird2 gobgpd exabgp curl tcpdump python3
fi
for t in "$bird" "$birdc" gobgpd gobgp /usr/sbin/exabgp curl tcpdump "$py"; do
  command -v "$t" >/dev/null || { echo "missing $t (run as root to install it)" >&2; exit 1; }
done
"$py" -c 'import exabgp.application.healthcheck' || { echo "exabgp has no healthcheck module" >&2; exit 1; }

if [ -n "${PATHOSD:-}" ]; then
  pathosd=$PATHOSD # another build (before/after comparisons in one hour)
else
  cargo build --release --locked --quiet
  pathosd=$PWD/target/release/pathosd
fi

tmp=$(mktemp -d /tmp/pathosd-compare.XXXXXX)
declare -A pid=() # announcer -> pid while it runs
cleanup() {
  local a
  for a in "${!pid[@]}"; do halt "$a"; done
  cleanup_pids
  if [ -n "${KEEP:-}" ]; then echo "logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

net=127.150.0
router_ip=$net.1
port=1179
router_as=65000
declare -A ip=([pathosd]=$net.2 [bird]=$net.3 [gobgpd]=$net.4 [exabgp]=$net.5 [pathosd_http]=$net.6)
declare -A asn=([pathosd]=65002 [bird]=65003 [gobgpd]=65004 [exabgp]=65005 [pathosd_http]=65006)
declare -A octet=([pathosd]=2 [bird]=3 [gobgpd]=4 [exabgp]=5 [pathosd_http]=6)
tcp_backend=127.150.1.1:8081
http_backend=127.150.1.2:8080
gobgp_api=50051

started_at=
declare -A V=()       # "figure|announcer" -> value
rlog=$tmp/router/bird.log
results=$tmp/results  # raw per-run values, one "figure|announcer value" a line
: >"$results"

first_prefix() { echo "10.${octet[$1]}.0.0/32"; }
proto() { echo "p_$1"; }

# --- the router ------------------------------------------------------------

router_conf() {
  local a
  cat <<EOF
log "$rlog" all;
timeformat log "%s.%6f";
router id $router_ip;
protocol device { }
EOF
  for a in pathosd pathosd_http bird gobgpd exabgp; do
    # Quirks of BIRD on lo as in convergence.sh. `graceful restart off`: a
    # session that dies takes its routes at once whatever the announcer
    # advertised (pathosd offers GR by default), so "gone" means the same
    # for every peer.
    cat <<EOF
protocol bgp $(proto "$a") {
  local $router_ip port $port as $router_as;
  neighbor ${ip[$a]} port $port as ${asn[$a]};
  multihop;
  strict bind on;
  passive on;
  hold time $hold;
  error wait time 1,2;
  graceful restart off;
  debug { states, routes };
  ipv4 { import all; export none; };
}
EOF
  done
}

start_router() {
  mkdir -p "$tmp/router"
  router_conf >"$tmp/router/bird.conf"
  "$bird" -f -c "$tmp/router/bird.conf" -s "$tmp/router/bird.ctl" -P "$tmp/router/bird.pid" \
    >/dev/null 2>"$tmp/router/bird.err" &
  pids+=("$!")
  wait_ctl "$tmp/router/bird.ctl"
}

# The router's protocol for announcer $1 waits for a connection again
# (BGP state Passive). After a session ended, BIRD first waits its `error
# wait time` (1–2 s here) and would refuse the next start's connection:
# that wait is the router's, not the announcer's.
router_ready() {
  local i
  for i in $(seq 1 "$((deadline_s * 20))"); do
    "$birdc" -s "$tmp/router/bird.ctl" show protocols "$(proto "$1")" 2>/dev/null | grep -q 'Passive' && return 0
    sleep 0.05
  done
  # Go on: the figures that depend on it come out NA, the others stand.
  echo "router: $(proto "$1") not back to Passive after ${deadline_s} s:" >&2
  "$birdc" -s "$tmp/router/bird.ctl" show protocols all "$(proto "$1")" 2>&1 | grep -E 'BGP state|Last error|Neighbor' >&2 || true
}

# Byte offset of the router log now: waits read only what comes after.


added_re() { echo "$(proto "$1")\.ipv4 > added [^ ]+ ${2//./\\.} "; }
removed_re() { echo "$(proto "$1")\.ipv4 > removed [^ ]+ ${2//./\\.} "; }

# wait_all OFFSET ANNOUNCER N: the log timestamp of the N-th route added
# from ANNOUNCER after OFFSET (polled every 50 ms), NA on timeout or death.
wait_all() {
  local off=$1 a=$2 n=$3 end got
  end=$(($(usec) + deadline_s * 1000000))
  while [ "$(usec)" -lt "$end" ]; do
    got=$(tail -c +"$((off + 1))" "$rlog" | grep -c -E "$(proto "$a")\.ipv4 > added " || true)
    if [ "$got" -ge "$n" ]; then
      tail -c +"$((off + 1))" "$rlog" | grep -E "$(proto "$a")\.ipv4 > added " | sed -n "${n}p" | cut -d' ' -f1
      return 0
    fi
    alive "${pid[$a]}" || break
    sleep 0.05
  done
  echo "$a: $got of $n routes in the router" >&2
  echo NA
}

# --- check backends --------------------------------------------------------

declare -A backend_pid=()
# start_backend IP:PORT: a listener (compare_helper.py backend); sets
# backend_t to the epoch time it started listening.
backend_t=
start_backend() {
  local hp=$1 stamp=$tmp/backend-${1//[.:]/_}.stamp i
  rm -f "$stamp"
  "$py" "$helper" backend "${hp%:*}" "${hp#*:}" "$stamp" 2>>"$tmp/backend.err" &
  backend_pid[$hp]=$!
  pids+=("$!")
  for i in $(seq 1 200); do
    if [ -s "$stamp" ]; then
      backend_t=$(cat "$stamp")
      return 0
    fi
    alive "${backend_pid[$hp]}" || break
    sleep 0.01
  done
  echo "backend $hp did not start" >&2
  return 1
}
stop_backend() {
  local p=${backend_pid[$1]:-}
  [ -n "$p" ] || return 0
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  forget "$p"
  unset "backend_pid[$1]"
}

# --- announcers ------------------------------------------------------------

# pathosd_conf NAME MODE N: MODE always, tcp (N VIPs, tcp check every 1 s
# with the default 100 ms timeout) or http (N VIPs, HTTP check every 1 s,
# rise 1, fall 1).
pathosd_conf() {
  local a=$1 mode=$2 n=$3 check
  case $mode in
    always) check='"always": true' ;;
    tcp) check="\"check\": { \"type\": \"tcp\", \"interval\": \"1s\", \"rise\": 1, \"tcp\": { \"host\": \"${tcp_backend%:*}\", \"port\": ${tcp_backend#*:} } }" ;;
    http) check="\"check\": { \"type\": \"http\", \"interval\": \"1s\", \"timeout\": \"500ms\", \"rise\": 1, \"fall\": 1, \"http\": { \"url\": \"http://$http_backend/\", \"keep_alive\": $http_keep_alive } }, \"policy\": { \"fail_action\": \"withdraw\" }" ;;
  esac
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": ${asn[$a]}, "router_id": "${ip[$a]}", "local_address": "${ip[$a]}" },
  "bgp": {
    "listen_port": -1,
    "hold_time": "${hold}s",
    "neighbors": [
      { "name": "router", "address": "$router_ip", "port": $port, "peer_asn": $router_as,
        "enable_multihop": true }
    ]
  },
  "api": { "listen": "" },
  "logging": { "level": "${PATHOSD_LOG:-warn}" },
  "vips": [
EOF
  prefixes "$n" "${octet[$a]}" | awk -v c="$check" '{ printf "%s    { \"name\": \"v%d\", \"prefix\": \"%s\", %s }", (NR > 1 ? ",\n" : ""), NR, $0, c } END { print "" }'
  echo "  ]"
  echo "}"
}

bird_peer_conf() {
  local n=$1
  cat <<EOF
log stderr all;
router id ${ip[bird]};
protocol device { }
protocol static static_routes {
  ipv4;
EOF
  prefixes "$n" "${octet[bird]}" | sed 's/.*/  route & blackhole;/'
  cat <<EOF
}
protocol bgp upstream {
  local ${ip[bird]} port $port as ${asn[bird]};
  neighbor $router_ip port $port as $router_as;
  multihop;
  strict bind on;
  hold time $hold;
  connect retry time 1;
  connect delay time 0;
  error wait time 1,2;
  ipv4 { import none; export all; };
}
EOF
}

# admin-down: with many routes the session waits until they are injected.
gobgpd_conf() {
  cat <<EOF
[global.config]
  as = ${asn[gobgpd]}
  router-id = "${ip[gobgpd]}"
  port = -1
  local-address-list = ["${ip[gobgpd]}"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "$router_ip"
    peer-as = $router_as
    admin-down = $1
  [neighbors.transport.config]
    local-address = "${ip[gobgpd]}"
    remote-port = $port
  [neighbors.ebgp-multihop.config]
    enabled = true
    multihop-ttl = 255
  [neighbors.timers.config]
    connect-retry = 1
    hold-time = $hold
    keepalive-interval = $((hold / 3 > 0 ? hold / 3 : 1))
EOF
}

# ExaBGP: MODE http runs Debian's healthcheck (curl against the HTTP
# backend every 1 s, rise 1, fall 1, withdraw on down) for one VIP; MODE
# static announces N routes from its config.
exabgp_conf() {
  local mode=$1 n=$2
  if [ "$mode" = http ]; then
    cat <<EOF
process hc {
  run $py -m exabgp healthcheck --no-syslog --interval 1 --fast-interval 1 --rise 1 --fall 1 --timeout 1 --withdraw-on-down --no-ip-setup --ip $(first_prefix exabgp) --cmd "curl -sf -o /dev/null --max-time 1 http://$http_backend/";
  encoder text;
}
EOF
  fi
  cat <<EOF
neighbor $router_ip {
  router-id ${ip[exabgp]};
  local-address ${ip[exabgp]};
  local-as ${asn[exabgp]};
  peer-as $router_as;
  connect $port;
  hold-time $hold;
EOF
  if [ "$mode" = http ]; then
    echo "  api { processes [ hc ]; }"
  else
    echo "  static {"
    prefixes "$n" "${octet[exabgp]}" | sed 's/.*/    route & next-hop self;/'
    echo "  }"
  fi
  echo "}"
}

gobgp_cli() { gobgp -u "${ip[gobgpd]}" -p "$gobgp_api" "$@"; }

# start ANNOUNCER MODE N: writes its config and starts it (for gobgpd also
# gives it its routes) once the router waits for it; sets pid[ANNOUNCER]
# and started_at (the time of the fork, EPOCHREALTIME). MODE: always|tcp|http for
# pathosd, http|static for ExaBGP, cli|mrt for gobgpd, ignored for BIRD.
start() {
  local a=$1 mode=$2 n=$3 dir i
  router_ready "$a"
  dir=$tmp/$a.$(usec)
  mkdir -p "$dir"
  # The config is written before the stamp: writing it forks cat and awk
  # (2–4 ms on a quiet machine, tens of ms under load), which is the
  # script's work, not the announcer's.
  case $a in
    pathosd | pathosd_http) pathosd_conf "$a" "$mode" "$n" >"$dir/pathosd.json" ;;
    bird) bird_peer_conf "$n" >"$dir/bird.conf" ;;
    gobgpd) gobgpd_conf "$([ "$mode" = mrt ] && echo true || echo false)" >"$dir/gobgpd.toml" ;;
    exabgp) exabgp_conf "$mode" "$n" >"$dir/exabgp.conf" ;;
  esac
  started_at=$EPOCHREALTIME
  case $a in
    pathosd | pathosd_http)
      "$pathosd" run --config "$dir/pathosd.json" >/dev/null 2>"$dir/log" &
      ;;
    bird)
      "$bird" -f -c "$dir/bird.conf" -s "$dir/bird.ctl" -P "$dir/bird.pid" >/dev/null 2>"$dir/log" &
      ;;
    gobgpd)
      gobgpd -f "$dir/gobgpd.toml" -t toml --api-hosts "${ip[gobgpd]}:$gobgp_api" \
        --pprof-disable -l warn >/dev/null 2>"$dir/log" &
      ;;
    exabgp)
      env exabgp_daemon_user=root exabgp_daemon_drop=false exabgp_api_cli=false \
        exabgp_log_level=WARNING exabgp_tcp_bind='' \
        /usr/sbin/exabgp "$dir/exabgp.conf" >"$dir/log" 2>&1 &
      ;;
  esac
  pid[$a]=$!
  pids+=("$!")
  echo "$dir" >"$tmp/dir.$a"
  if [ "$a" = gobgpd ]; then
    for i in $(seq 1 "$((deadline_s * 20))"); do
      gobgp_cli global >/dev/null 2>&1 && break
      if ! alive "${pid[$a]}" || [ "$i" = "$((deadline_s * 20))" ]; then
        echo "gobgpd's API did not come up" >&2
        log_tail gobgpd
        return 1
      fi
      sleep 0.05
    done
    if [ "$mode" = mrt ]; then
      "$py" "$helper" mrt "$n" "$dir/routes.mrt"
      gobgp_cli mrt inject global "$dir/routes.mrt" >/dev/null
      # Injection is asynchronous: the session starts once all are in.
      for i in $(seq 1 200); do
        [ "$(gobgp_cli global rib summary -a ipv4 | awk '/Destination:/ { print $2 + 0 }')" = "$n" ] && break
        sleep 0.05
      done
      gobgp_cli neighbor "$router_ip" enable >/dev/null
    else
      prefixes "$n" "${octet[gobgpd]}" | while read -r p; do
        gobgp_cli global rib add -a ipv4 "$p" nexthop "${ip[gobgpd]}"
      done
    fi
  fi
}

# Stops an announcer by PID (SIGTERM, then SIGKILL after 5 s), then any
# child it left behind (ExaBGP's healthcheck, should ExaBGP need the KILL).
halt() {
  local a=$1 kids k start
  [ -n "${pid[$a]:-}" ] || return 0
  # pid and start time (field 22 of /proc/PID/stat): a pid reused since is
  # not signalled.
  kids=$(for k in $(ps -o pid= --ppid "${pid[$a]}" 2>/dev/null || true); do
    echo "$k:$(awk '{ print $22 }' "/proc/$k/stat" 2>/dev/null || true)"
  done)
  stop "${pid[$a]}"
  forget "${pid[$a]}"
  unset "pid[$a]"
  for k in $kids; do
    start=$(awk '{ print $22 }' "/proc/${k%%:*}/stat" 2>/dev/null || true)
    if [ -n "$start" ] && [ "$start" = "${k#*:}" ]; then
      kill -KILL "${k%%:*}" 2>/dev/null || true
    fi
  done
}

# signal_tree SIG ANNOUNCER: the announcer and its children (ExaBGP's
# healthcheck and its curl), as a frozen or stopped service would be.
signal_tree() {
  local p
  for p in $(ps -o pid= --ppid "${pid[$2]}" 2>/dev/null || true) "${pid[$2]}"; do
    kill "-$1" "$p" 2>/dev/null || true
  done
}

record() { echo "$1|$2 $3" >>"$results"; }
cpu_ns() { "$py" "$helper" cpu "$1"; }
mem_kib() { "$py" "$helper" mem "$1"; }

log_tail() {
  echo "--- $1 log:" >&2
  tail -n 5 "$(cat "$tmp/dir.$1")/log" >&2 || true
}

# --- figures ---------------------------------------------------------------

phase_size() {
  echo "== binary size" >&2
  V["size|pathosd"]=$(stat -c %s "$pathosd")
  V["size|bird"]=$(stat -c %s "$bird")
  V["size|gobgpd"]=$(stat -Lc %s "$(command -v gobgpd)")
  # ExaBGP is Python: its two packages' files, without the interpreter.
  V["size|exabgp"]=$(dpkg -L exabgp python3-exabgp | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && stat -c %s "$f"; done | awk '{ s += $1 } END { print s }')
}

# One round of every timing figure with one route per announcer.
timing_run() {
  local r=$1 a off t0 t ann=() checked=(pathosd_http) x
  for x in "${peers[@]}"; do [ "$x" = exabgp ] && checked+=(exabgp); done
  start_backend "$http_backend"
  # start → route, one announcer after the other so they don't share the CPU.
  for a in pathosd pathosd_http "${peers[@]}"; do
    off=$(mark)
    case $a in
      pathosd) start "$a" always 1 ;;
      pathosd_http) start "$a" http 1 ;;
      gobgpd) start "$a" cli 1 ;;
      exabgp) start "$a" http 1 ;;
      bird) start "$a" static 1 ;;
    esac
    t0=$started_at
    t=$(wait_log "$off" "$(added_re "$a" "$(first_prefix "$a")")")
    [ "$t" != NA ] || log_tail "$a"
    record "start_route" "$a" "$(ms_between "$t0" "$t")"
    ann+=("$a")
  done
  # backend down → withdrawn, backend up → route back (the checked ones)
  off=$(mark)
  t0=$EPOCHREALTIME
  stop_backend "$http_backend"
  for a in "${checked[@]}"; do
    record "down_withdrawn" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(removed_re "$a" "$(first_prefix "$a")")")")"
  done
  off=$(mark)
  start_backend "$http_backend"
  t0=$backend_t
  for a in "${checked[@]}"; do
    record "up_back" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(added_re "$a" "$(first_prefix "$a")")")")"
  done
  # SIGSTOP → gone, SIGCONT → back: all at once (independent sessions).
  off=$(mark)
  t0=$EPOCHREALTIME
  for a in "${ann[@]}"; do signal_tree STOP "$a"; done
  for a in "${ann[@]}"; do
    record "stop_gone" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(removed_re "$a" "$(first_prefix "$a")")")")"
  done
  # The router accepts again (its error wait is over) before the SIGCONT.
  for a in "${ann[@]}"; do router_ready "$a"; done
  off=$(mark)
  t0=$EPOCHREALTIME
  for a in "${ann[@]}"; do signal_tree CONT "$a"; done
  for a in "${ann[@]}"; do
    record "cont_back" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(added_re "$a" "$(first_prefix "$a")")")")"
  done
  # SIGTERM → gone
  off=$(mark)
  t0=$EPOCHREALTIME
  for a in "${ann[@]}"; do kill -TERM "${pid[$a]}" 2>/dev/null || true; done
  for a in "${ann[@]}"; do
    record "term_gone" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(removed_re "$a" "$(first_prefix "$a")")")")"
  done
  for a in "${ann[@]}"; do halt "$a"; done
  stop_backend "$http_backend"
  echo "   run $r done" >&2
}

phase_timing() {
  local r
  echo "== timing, $runs runs" >&2
  for r in $(seq 1 "$runs"); do timing_run "$r"; done
}

# idle_window FIGURE_SUFFIX ANNOUNCER...: after a 2 s warm-up, CPU over
# IDLE_SECS (reported per 60 s) and memory at its end.
idle_window() {
  local sfx=$1 a c
  shift
  declare -A c0=()
  sleep 2 # let start-up work (first probes, End-of-RIB, GC) finish
  for a in "$@"; do c0[$a]=$(cpu_ns "${pid[$a]}"); done
  sleep "$idle_secs"
  for a in "$@"; do
    c=$(cpu_ns "${pid[$a]}")
    record "cpu_$sfx" "$a" "$(awk -v a="${c0[$a]}" -v b="$c" -v w="$idle_secs" 'BEGIN { printf "%.1f", (b - a) / 1e6 * 60 / w }')"
    read -r rss hwm anon sanon pss <<<"$(mem_kib "${pid[$a]}")"
    record "rss_$sfx" "$a" "$rss"
    record "hwm_$sfx" "$a" "$hwm"
    record "anon_$sfx" "$a" "$anon"
    echo "   $sfx $a: rss $rss hwm $hwm anon $anon smaps-anon $sanon pss $pss KiB" >&2
  done
}

# pcap windows: "figure announcer from to" for UPDATE counts at the end.
windows=$tmp/windows
: >"$windows"

phase_levels() {
  local n a off t0 t running
  start_backend "$tcp_backend"
  start_backend "$http_backend"
  for n in "${counts[@]}"; do
    echo "== $n tcp-checked VIPs (peers: $n static routes), ${idle_secs} s idle" >&2
    off=$(mark)
    running=()
    start pathosd tcp "$n"
    t0=$started_at
    running+=(pathosd)
    if [ "$n" = 1 ]; then
      start pathosd_http http 1
      running+=(pathosd_http)
    fi
    for a in "${peers[@]}"; do
      case $a in
        bird) start bird static "$n" ;;
        gobgpd) start gobgpd mrt "$n" ;;
        exabgp) [ "$n" = 1 ] || continue; start exabgp http 1 ;;
      esac
      running+=("$a")
    done
    for a in "${running[@]}"; do
      t=$(wait_all "$off" "$a" "$n")
      [ "$t" != NA ] || log_tail "$a"
      echo "coming_up_$n $a $t0 $t" >>"$windows"
    done
    idle_window "$n" "${running[@]}"
    for a in "${running[@]}"; do halt "$a"; done
  done
  stop_backend "$tcp_backend"
  stop_backend "$http_backend"
}

phase_always() {
  local n=$always_n a off t0 t est running=() c
  echo "== $n always VIPs / static routes, one announcer after the other" >&2
  for a in pathosd "${peers[@]}"; do
    off=$(mark)
    case $a in
      pathosd) start pathosd always "$n" ;;
      bird) start bird static "$n" ;;
      gobgpd) start gobgpd mrt "$n" ;;
      exabgp) start exabgp static "$n" ;;
    esac
    t0=$started_at
    t=$(wait_all "$off" "$a" "$n")
    c=$(cpu_ns "${pid[$a]}")
    est=$(wait_log "$off" "$(proto "$a"): State changed to up")
    [ "$t" != NA ] || log_tail "$a"
    record "est_all" "$a" "$(ms_between "$est" "$t")"
    record "start_all" "$a" "$(ms_between "$t0" "$t")"
    record "cpu_to_all" "$a" "$(awk -v c="$c" 'BEGIN { printf "%.1f", c / 1e6 }')"
    echo "routes_$n $a $t0 $t" >>"$windows"
    running+=("$a")
    echo "   $a: Established → all $(ms_between "$est" "$t") ms" >&2
  done
  echo "== $n routes idle, ${idle_secs} s" >&2
  idle_window "$n" "${running[@]}"
  for a in "${running[@]}"; do halt "$a"; done
}

# --- the run ---------------------------------------------------------------

tcpdump -i lo -s 0 -U -B 16384 -w "$tmp/bgp.pcap" "tcp port $port and net $net.0/24" \
  2>"$tmp/tcpdump.err" &
tcpdump_pid=$!
pids+=("$tcpdump_pid")
for i in $(seq 1 200); do
  grep -q 'listening on' "$tmp/tcpdump.err" 2>/dev/null && break
  alive "$tcpdump_pid" || { cat "$tmp/tcpdump.err" >&2; exit 1; }
  sleep 0.02
done
start_router

[[ $phases != *" size "* ]] || phase_size
[[ $phases != *" timing "* ]] || phase_timing
[[ $phases != *" levels "* ]] || phase_levels
[[ $phases != *" always "* ]] || phase_always

stop "$tcpdump_pid"
forget "$tcpdump_pid"
grep -E 'dropped by kernel' "$tmp/tcpdump.err" >&2 || true
"$py" "$helper" pcap "$tmp/bgp.pcap" >"$tmp/messages"
# UPDATEs (type 2) an announcer sent from its start until its last route
# was in the router, plus 1 s for re-sends; not the End-of-RIB (an empty
# UPDATE, 23 bytes), which carries no route.
while read -r fig a from to; do
  [ "$to" != NA ] || { record "updates_$fig" "$a" NA; continue; }
  record "updates_$fig" "$a" "$(awk -v s="${ip[$a]}" -v f="$from" -v t="$to" '$2 == s && $3 == 2 && $4 > 23 && $1 >= f && $1 <= t + 1 { n++ } END { print n + 0 }' "$tmp/messages")"
done <"$windows"

# --- the table -------------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "NA"; else print v[int((NR + 1) / 2)] }'; }
# The median of a figure's runs, NA when any run is NA (a failed wait).
value() {
  local vals
  vals=$(awk -v k="$1|$2" '$1 == k { print $2 }' "$results")
  [ -n "$vals" ] || { echo "${V[$1|$2]:-N/A}"; return; }
  if grep -q NA <<<"$vals"; then echo NA; else median <<<"$vals"; fi
}
num() { [[ $1 =~ ^[0-9.]+$ ]]; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%.2f", a / b }'; }
# judge VALUE OP LIMIT
judge() {
  if ! num "$1" || ! num "$3"; then
    echo "n/a"
    return
  fi
  awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? v <= l : v >= l; print ok ? "pass" : "FAIL" }'
}

declare -A short=([bird]=B [gobgpd]=G [exabgp]=E)
fmt='| %s | %s | %s | %s | %s | %s | %s | %s |\n'
# row LABEL FIGURE OURS [TARGET_TEXT OP LIMIT]: OURS is the pathosd
# instance of the figure; ratios are pathosd / each peer.
row() {
  local label=$1 fig=$2 ours=$3 ttext=${4:-} op=${5:-} limit=${6:-} o v r="" a cols=()
  o=$(value "$fig" "$ours")
  for a in bird gobgpd exabgp; do
    v=$(value "$fig" "$a")
    cols+=("$v")
    if num "$o" && num "$v"; then r+="${r:+ · }${short[$a]} $(ratio "$o" "$v")"; fi
  done
  # ExaBGP runs one healthcheck: its idle CPU with that one check is the
  # reference for pathosd's 100 and 1,000 checks.
  v=$(value cpu_1 exabgp)
  if [[ $fig == cpu_* && $fig != cpu_1 && ${cols[2]} == N/A ]] && num "$o" && num "$v"; then
    r+="${r:+ · }E(1 check) $(ratio "$o" "$v")"
  fi
  # shellcheck disable=SC2059 # the format is this script's own
  printf "$fmt" "$label" "$o" "${cols[0]}" "${cols[1]}" "${cols[2]}" "${r:--}" "${ttext:--}" "$( [ -n "$op" ] && judge "$o" "$op" "$limit" || echo -)"
}

echo
echo "$("$pathosd" --version 2>/dev/null || echo 'pathosd ?') ($(git rev-parse --short HEAD 2>/dev/null || echo '?')), $(nproc) CPUs, IDLE_SECS=$idle_secs RUNS=$runs HOLD=$hold HTTP_KEEP_ALIVE=${HTTP_KEEP_ALIVE:-0}"
echo "ratio = pathosd / peer (B BIRD, G gobgpd, E ExaBGP): below 1 pathosd is smaller or faster"
echo
# shellcheck disable=SC2059
printf "$fmt" figure pathosd BIRD gobgpd "ExaBGP + healthcheck" ratio target pass/fail
echo "|---|---:|---:|---:|---:|---|---|---|"
if [[ $phases == *" size "* ]]; then
  row "binary size, bytes (ExaBGP: files of exabgp + python3-exabgp, without Python)" size pathosd
fi
if [[ $phases == *" levels "* ]]; then
  for n in "${counts[@]}"; do
    row "RSS, KiB, $n tcp-checked VIP(s) (peers: $n route(s), no checks; ExaBGP: 1 HTTP healthcheck)" "rss_$n" pathosd
    row "anonymous memory, KiB, $n tcp-checked VIP(s)" "anon_$n" pathosd
    case $n in
      100) row "idle CPU, ms per 60 s, $n tcp-checked VIP(s) at 1 s" "cpu_$n" pathosd "≤ 300 ms" "<=" 300 ;;
      1000) row "idle CPU, ms per 60 s, $n tcp-checked VIP(s) at 1 s" "cpu_$n" pathosd "≤ 3,000 ms" "<=" 3000 ;;
      *) row "idle CPU, ms per 60 s, $n tcp-checked VIP(s) at 1 s" "cpu_$n" pathosd ;;
    esac
    x=$(value "cpu_$n" pathosd)
    if [ "$n" -gt 1 ] && num "$x"; then
      V["probe|pathosd"]=$(awk -v c="$x" -v n="$n" 'BEGIN { printf "%.3f", c / (60 * n) }')
      row "CPU per tcp probe, ms, at $n VIPs" probe pathosd
    fi
    row "UPDATE messages while $n VIP(s) come up (without End-of-RIB)" "updates_coming_up_$n" pathosd
    if [ "$n" = 1 ]; then
      row "RSS, KiB, 1 HTTP-checked VIP (ExaBGP: + healthcheck)" rss_1 pathosd_http
      row "anonymous memory, KiB, 1 HTTP-checked VIP" anon_1 pathosd_http
      row "idle CPU, ms per 60 s, 1 HTTP-checked VIP at 1 s" cpu_1 pathosd_http "≤ 20 ms" "<=" 20
    fi
  done
  lo=${counts[0]}
  hi=${counts[${#counts[@]} - 1]}
  if [ "$hi" != "$lo" ]; then
    for a in pathosd bird gobgpd; do
      x=$(value "anon_$hi" "$a")
      y=$(value "anon_$lo" "$a")
      if num "$x" && num "$y"; then
        V["anon_per|$a"]=$(awk -v x="$x" -v y="$y" -v h="$hi" -v l="$lo" 'BEGIN { printf "%.2f", (x - y) / (h - l) }')
      fi
    done
    row "anonymous memory per VIP (route), KiB, from $lo to $hi" anon_per pathosd "≤ 4 KiB" "<=" 4
  fi
fi
if [[ $phases == *" always "* ]]; then
  n=$always_n
  row "RSS, KiB, $n always VIPs (peers: $n routes)" "rss_$n" pathosd
  x=$(value "hwm_$n" bird)
  row "peak RSS, KiB, $n always VIPs" "hwm_$n" pathosd "≤ BIRD's" "<=" "$x"
  row "anonymous memory, KiB, $n always VIPs" "anon_$n" pathosd
  row "idle CPU, ms per 60 s, $n always VIPs" "cpu_$n" pathosd
  x=$(value est_all gobgpd)
  row "$n routes: Established → all in BIRD, ms" est_all pathosd "≤ gobgpd's" "<=" "$x"
  row "$n routes: start → all in BIRD, ms" start_all pathosd
  row "$n routes: sender CPU from start to all in, ms" cpu_to_all pathosd
  row "$n routes: UPDATE messages (without End-of-RIB)" "updates_routes_$n" pathosd "≤ 13" "<=" 13
fi
if [[ $phases == *" timing "* ]]; then
  row "start → route, ms, 1 \`always\` VIP (peers: 1 route)" start_route pathosd "≤ 10 ms" "<=" 10
  row "start → route, ms, 1 VIP, HTTP check rise 1" start_route pathosd_http "≤ 60 ms" "<=" 60
  row "backend down → withdrawn, ms (HTTP check 1 s, fall 1)" down_withdrawn pathosd_http
  row "backend up → route back, ms (rise 1)" up_back pathosd_http
  row "SIGTERM → route gone, ms" term_gone pathosd
  row "SIGSTOP → route gone, ms (hold time ${hold} s)" stop_gone pathosd
  row "SIGCONT → route back, ms" cont_back pathosd
  row "SIGTERM → route gone, ms, the HTTP-checked pathosd" term_gone pathosd_http
fi
