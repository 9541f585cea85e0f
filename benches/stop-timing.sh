#!/usr/bin/env bash
# How fast a route leaves and comes back at the router when the announcer
# stops, stalls or resumes: pathosd next to BIRD and ExaBGP as announcers,
# in the same run, against one router BIRD with the recipe's session
# settings (examples/openwrt-bird.conf: hold time 9, keepalive 3, `graceful
# restart off`, `error wait time 0, 0`), on loopback.
#
#   term     SIGTERM → all of 10,000 routes gone at the router; pathosd
#            with no shutdown_drain, and BIRD (with 10,000 static routes);
#   drain    pathosd with shutdown_drain '2s' and one VIP: SIGTERM → route
#            withdrawn, and withdrawn → the session's Cease, at the router;
#   cont     SIGSTOP until the router's hold timer has dropped the route,
#            then SIGCONT → route back; pathosd (a young session: up for
#            less than error_wait_max) and ExaBGP, stopped and resumed
#            together (independent sessions).
#
# Times come from the router's log (`timeformat log "%s.%6f"`, `debug {
# states, routes }`), against the script's clock at the signal (both
# CLOCK_REALTIME); the log is read every 10 ms, which adds nothing to the
# figures. Prints per kind and announcer min / p50 / p99 of RUNS (p99 of
# 10 runs is the largest).
#
# usage: benches/stop-timing.sh [RUNS] [term|drain|cont...]   (default: 10, all three)
# env: PATHOSD_BIN (default target/release/pathosd), PATHOSD_LOG (pathosd's
# log level, default info as shipped), NO_EXABGP=1 (skip ExaBGP),
# EXABGP_LOG (its log level, default WARNING), KEEP_LOG=FILE (keep the
# router's log there).
# Needs bird, birdc and, for `cont`, Debian's exabgp (/usr/sbin/exabgp).
# Every wait is bounded; a trap stops every process this script started,
# by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

runs=${1:-10}
shift || true
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(term drain cont)
bin=${PATHOSD_BIN:-target/release/pathosd}
[ -x "$bin" ] || { echo "no pathosd at $bin (cargo build --release --bin pathosd)" >&2; exit 1; }
need_tools bird birdc
exabgp=
if [ -z "${NO_EXABGP:-}" ]; then
  [ -x /usr/sbin/exabgp ] || { echo "ExaBGP is needed for cont (apt-get install exabgp), or NO_EXABGP=1" >&2; exit 1; }
  exabgp=/usr/sbin/exabgp
fi

n=$(($$ % 200 + 20))
net=127.198.$n
port=$((15000 + $$ % 900))
router_ip=$net.1
router_as=65000
declare -A ip=([pathosd]=$net.2 [bird]=$net.3 [exabgp]=$net.5)
declare -A asn=([pathosd]=65001 [bird]=65003 [exabgp]=65005)
declare -A octet=([pathosd]=2 [bird]=3 [exabgp]=5)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-stop.XXXXXX")
trap 'cleanup_pids; [ -z "${KEEP_LOG:-}" ] || cp "$rlog" "$KEEP_LOG"; rm -rf "$tmp"' EXIT
rlog=$tmp/router.log
deadline_s=30


# --- the router ------------------------------------------------------------

{
  cat <<EOF
log "$rlog" all;
timeformat log "%s.%6f";
router id $router_ip;
protocol device { }
EOF
  for a in pathosd bird exabgp; do
    cat <<EOF
protocol bgp p_$a {
  local $router_ip port $port as $router_as;
  neighbor ${ip[$a]} port $port as ${asn[$a]};
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
  done
} >"$tmp/router.conf"
bird -f -c "$tmp/router.conf" -s "$tmp/router.ctl" -P "$tmp/router.pid" >/dev/null 2>"$tmp/router.err" &
pids+=("$!")
wait_ctl "$tmp/router.ctl"

added_re() { echo "p_$1\.ipv4 > added "; }
removed_re() { echo "p_$1\.ipv4 > removed "; }
# The router took the Cease (or any end of the session) from $1.
closed_re() { echo "p_$1: State changed to stop"; }
# The router has dropped every route of $1's session.
down_re() { echo "p_$1: State changed to down"; }
# The router's protocol for $1 waits for a connection again.
router_ready() {
  local i
  for i in $(seq 1 "$((deadline_s * 20))"); do
    birdc -s "$tmp/router.ctl" show protocols "p_$1" 2>/dev/null | grep -q 'Passive' && return 0
    sleep 0.05
  done
  echo "router: p_$1 not back to Passive" >&2
  return 1
}

# --- the announcers --------------------------------------------------------

# pathosd_conf N DRAIN
pathosd_conf() {
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": ${asn[pathosd]}, "router_id": "${ip[pathosd]}", "local_address": "${ip[pathosd]}" },
  "bgp": {
    "listen_port": -1,
    "hold_time": "9s",
    "graceful_restart": false,
    "shutdown_drain": "$2",
    "neighbors": [
      { "name": "router", "address": "$router_ip", "port": $port, "peer_asn": $router_as,
        "enable_multihop": true }
    ]
  },
  "api": { "listen": "" },
  "logging": { "level": "${PATHOSD_LOG:-info}", "syslog": false },
  "vips": [
EOF
  prefixes "$1" "${octet[pathosd]}" | awk '{ printf "%s    { \"name\": \"v%d\", \"prefix\": \"%s\", \"always\": true }", (NR > 1 ? ",\n" : ""), NR, $0 } END { print "" }'
  echo "  ]"
  echo "}"
}

bird_conf() {
  cat <<EOF
log stderr all;
router id ${ip[bird]};
protocol device { }
protocol static static_routes {
  ipv4;
EOF
  prefixes "$1" "${octet[bird]}" | sed 's/.*/  route & blackhole;/'
  cat <<EOF
}
protocol bgp upstream {
  local ${ip[bird]} port $port as ${asn[bird]};
  neighbor $router_ip port $port as $router_as;
  multihop;
  strict bind on;
  hold time 9;
  connect delay time 0;
  ipv4 { import none; export all; };
}
EOF
}

exabgp_conf() {
  cat <<EOF
neighbor $router_ip {
  router-id ${ip[exabgp]};
  local-address ${ip[exabgp]};
  local-as ${asn[exabgp]};
  peer-as $router_as;
  connect $port;
  hold-time 9;
  static {
EOF
  prefixes "$1" "${octet[exabgp]}" | sed 's/.*/    route & next-hop self;/'
  echo "  }"
  echo "}"
}

declare -A pid=()
# start ANNOUNCER N [DRAIN]: starts it with N routes and waits until the
# router has all of them (its route lines, or N in `show route count`
# when they are off).
start() {
  local a=$1 count=$2 off dir
  router_ready "$a"
  dir=$tmp/$a.$(usec)
  mkdir -p "$dir"
  off=$(mark)
  case $a in
    pathosd)
      pathosd_conf "$count" "${3:-0s}" >"$dir/pathosd.json"
      "$bin" run --config "$dir/pathosd.json" >/dev/null 2>"$dir/log" &
      ;;
    bird)
      bird_conf "$count" >"$dir/bird.conf"
      bird -f -c "$dir/bird.conf" -s "$dir/bird.ctl" -P "$dir/bird.pid" >/dev/null 2>"$dir/log" &
      ;;
    exabgp)
      exabgp_conf "$count" >"$dir/exabgp.conf"
      env exabgp_daemon_user=root exabgp_daemon_drop=false exabgp_api_cli=false \
        exabgp_log_level="${EXABGP_LOG:-WARNING}" exabgp_tcp_bind='' \
        "$exabgp" "$dir/exabgp.conf" >"$dir/log" 2>&1 &
      ;;
  esac
  pid[$a]=$!
  pids+=("$!")
  if ! until_count "$a" "$count"; then
    echo "$a: its $count routes never reached the router" >&2
    tail -15 "$dir/log" >&2
    exit 1
  fi
}

# until_count ANNOUNCER N: the router has N routes from it (deadline_s).
until_count() {
  local _
  for _ in $(seq 1 "$((deadline_s * 10))"); do
    birdc -s "$tmp/router.ctl" show route protocol "p_$1" count 2>/dev/null | grep -qE "^$2 of [0-9]+ routes" && return 0
    sleep 0.1
  done
  return 1
}

halt() {
  stop "${pid[$1]}"
  forget "${pid[$1]}"
}

results=$tmp/results
: >"$results"
record() { echo "$1|$2 $3" >>"$results"; }

# --- the runs --------------------------------------------------------------

term_run() {
  local a off t0
  for a in pathosd bird; do
    # Route lines off for this: the router logging 10,000 removals would
    # be most of the figure. "down" comes once it has flushed them all.
    birdc -s "$tmp/router.ctl" debug "p_$a" "{ states }" >/dev/null
    start "$a" 10000
    off=$(mark)
    t0=$EPOCHREALTIME
    kill -TERM "${pid[$a]}"
    record "term_cease" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(closed_re "$a")")")"
    record "term" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(down_re "$a")")")"
    halt "$a"
    birdc -s "$tmp/router.ctl" debug "p_$a" "{ states, routes }" >/dev/null
  done
}

drain_run() {
  local off t0 gone closed
  start pathosd 1 2s
  off=$(mark)
  t0=$EPOCHREALTIME
  kill -TERM "${pid[pathosd]}"
  gone=$(wait_log "$off" "$(removed_re pathosd)")
  closed=$(wait_log "$off" "$(closed_re pathosd)")
  record "drain_gone" pathosd "$(ms_between "$t0" "$gone")"
  record "drain_gap" pathosd "$(ms_between "$gone" "$closed")"
  halt pathosd
}

cont_run() {
  local a off t0 ann=(pathosd)
  [ -n "$exabgp" ] && ann+=(exabgp)
  for a in "${ann[@]}"; do start "$a" 1; done
  off=$(mark)
  for a in "${ann[@]}"; do kill -STOP "${pid[$a]}"; done
  for a in "${ann[@]}"; do
    [ "$(wait_log "$off" "$(removed_re "$a")")" != NA ] || { echo "$a: the router kept the stalled route" >&2; exit 1; }
  done
  off=$(mark)
  t0=$EPOCHREALTIME
  for a in "${ann[@]}"; do kill -CONT "${pid[$a]}"; done
  for a in "${ann[@]}"; do
    record "cont" "$a" "$(ms_between "$t0" "$(wait_log "$off" "$(added_re "$a")")")"
  done
  for a in "${ann[@]}"; do halt "$a"; done
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in "${kinds[@]}"; do
  case $kind in
    term | drain | cont) ;;
    *) echo "unknown kind $kind" >&2; exit 1 ;;
  esac
  for r in $(seq 1 "$runs"); do
    "${kind}_run"
    echo "  $kind run $r done" >&2
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# min / p50 / p99 (nearest rank) of one figure, NA runs counted apart.
summary() {
  grep "^$1|$2 " "$results" | cut -d' ' -f2 | grep -v NA | sort -n |
    awk -v na="$(grep -c "^$1|$2 NA" "$results" || true)" '
      { v[NR] = $1 }
      END {
        if (NR == 0) { print "NA"; exit }
        p50 = v[int((NR * 50 + 99) / 100)]; p99 = v[int((NR * 99 + 99) / 100)]
        printf "%s / %s / %s (%d runs%s)", v[1], p50, p99, NR, (na > 0 ? ", " na " NA" : "")
      }'
}
echo "figure, ms: min / p50 / p99"
echo "SIGTERM -> Cease at the router, 10,000 routes, pathosd:     $(summary term_cease pathosd)"
echo "SIGTERM -> Cease at the router, 10,000 routes, BIRD:        $(summary term_cease bird)"
echo "SIGTERM -> 10,000 routes gone, pathosd (no shutdown_drain): $(summary term pathosd)"
echo "SIGTERM -> 10,000 routes gone, BIRD:                         $(summary term bird)"
echo "shutdown_drain 2s: SIGTERM -> withdrawn:                     $(summary drain_gone pathosd)"
echo "shutdown_drain 2s: withdrawn -> Cease at the router:         $(summary drain_gap pathosd)"
echo "SIGCONT -> route back, pathosd:                              $(summary cont pathosd)"
echo "SIGCONT -> route back, ExaBGP:                               $(summary cont exabgp)"
