#!/usr/bin/env bash
# BFD between pathosd and the router's BIRD of the recipe
# (examples/openwrt-bird.conf, docs/openwrt.md: protocol bfd multihop at
# 100 ms x 3, `bfd on`), with pathosd's neighbor bfd options to match.
#
#   stall   RUNS times: pathosd announcing VIPS always-VIPs is frozen with
#           SIGSTOP once BFD is Up at both ends; the time until BIRD has no
#           route of the pathosd protocol left (polled with birdc, about
#           every 5 ms), then SIGCONT and the wait until every route is
#           back. Prints each run, then min / p50 / p99 / max of the stall.
#   churn   1,000 VIPs with a tcp check each (interval 1 s, rise 1, fall 1)
#           on one target whose listener this script turns on and off every
#           2 s, so every VIP is announced and withdrawn in bursts of 1,000
#           prefixes; and a SIGHUP every 3 s with the checks' interval
#           switching between 1s and 2s (every check loop restarts). For
#           SECONDS seconds BIRD's BFD session state is read every 100 ms:
#           any state but Up, any change of its "Since", a BFD down counted
#           by pathosd or a drop of the BGP session is a flap.
#
# The BIRD block is the example's, with a private log and control socket,
# addresses 127.198.N.1 (BIRD) and .2 (pathosd), a high port and no kernel
# protocol. Every wait is bounded; a trap stops every process this script
# started, by PID. BIRD's BFD binds ports 3784 and 4784 on every address:
# run nothing else with BFD (no other BIRD with protocol bfd, no bfdd)
# beside it.
#
# usage: benches/bfd-stall.sh [stall [RUNS [VIPS]]] [churn [SECONDS]]
#        (default: stall 20 3 churn 60)
# env: PATHOSD_BIN (default target/release/pathosd, else target/debug/pathosd).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

bin=${PATHOSD_BIN:-target/release/pathosd}
[ -x "$bin" ] || bin=target/debug/pathosd
[ -x "$bin" ] || { echo "no pathosd binary (cargo build --release --bin pathosd)" >&2; exit 1; }
need_tools bird birdc python3 curl

what=()
stall_runs=20 stall_vips=3 churn_secs=60
while [ $# -gt 0 ]; do
  case $1 in
    stall) what+=(stall); shift
      if [[ ${1:-} =~ ^[0-9]+$ ]]; then stall_runs=$1; shift; fi
      if [[ ${1:-} =~ ^[0-9]+$ ]]; then stall_vips=$1; shift; fi ;;
    churn) what+=(churn); shift
      if [[ ${1:-} =~ ^[0-9]+$ ]]; then churn_secs=$1; shift; fi ;;
    *) echo "usage: $0 [stall [RUNS [VIPS]]] [churn [SECONDS]]" >&2; exit 1 ;;
  esac
done
[ ${#what[@]} -gt 0 ] || what=(stall churn)

n=$(($$ % 200 + 20))
net=127.198.$n
port=$((15000 + $$ % 900))
api=$net.2:$((port + 1000))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-bfd.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT
birdc_() { birdc -s "$tmp/bird.ctl" "$@" 2>/dev/null; }

# The example's BIRD, its VIP set widened to 10.198.0.0/16+ (every VIP here).
awk -v bird="$net.1" -v pd="$net.2" -v port="$port" -v logf="$tmp/bird.log" '
	/^protocol kernel/ { skip = 1 }
	skip { if ($0 ~ /^}/) skip = 0; next }
	/^log / { print "log \"" logf "\" all;"; next }
	{
		gsub(/127\.0\.0\.1 as/, bird " port " port " as")
		gsub(/127\.0\.0\.2/, pd)
		gsub(/192\.168\.1\.53\/32, 192\.168\.1\.80\/32/, "10.198.0.0/16+")
		print
	}' examples/openwrt-bird.conf >"$tmp/bird.conf"
grep -q 'bfd on' "$tmp/bird.conf" || { echo "the example's BIRD block has no 'bfd on'" >&2; exit 1; }
bird -p -c "$tmp/bird.conf"

start_bird() {
  bird -f -c "$tmp/bird.conf" -s "$tmp/bird.ctl" -P "$tmp/bird.pid" >"$tmp/bird.out" 2>&1 &
  bird_pid=$!
  pids+=("$bird_pid")
  wait_ctl "$tmp/bird.ctl"
}

# pathosd's UCI: the neighbor with the recipe's BFD, then the VIPs of $1
# (UCI sections, already written).
pathosd_uci() {
  cat <<EOF
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.168.1.1'
	option local_address '$net.2'
	option listen_port '-1'
	option hold_time '9s'
	option graceful_restart '0'
	option api_listen '$api'
	option ubus_socket '$tmp/no-ubusd.sock'
	option log_syslog '0'

config neighbor 'bird'
	option address '$net.1'
	option port '$port'
	option peer_asn '65000'
	option bfd '1'
	option bfd_desired_minimum_tx_interval '100ms'
	option bfd_required_minimum_receive '100ms'
	option bfd_detection_multiplier '3'

EOF
  cat "$1"
}

routes() { birdc_ show route protocol pathosd count | awk '/routes for/ { print $1; exit }'; }
bfd_line() { birdc_ show bfd sessions | awk -v p="$net.2" '$1 == p'; }
our_bfd() { curl -sf --max-time 2 "http://$api/status" | python3 -c 'import json,sys; b = json.load(sys.stdin)["peers"][0]["bfd"]; print(b["state"], b["downs"])'; }

# Polls until `routes` is $1 (a number), at most $2 seconds, every ~5 ms.
until_routes() {
  local want=$1 deadline
  deadline=$(awk -v s="$2" -v t="$(now)" 'BEGIN { printf "%.3f", t + s }')
  while :; do
    [ "$(routes)" = "$want" ] && return 0
    awk -v d="$deadline" -v t="$(now)" 'BEGIN { exit !(t > d) }' && return 1
    sleep 0.005
  done
}

until_bfd_up() {
  local i
  for i in $(seq 1 150); do
    if bfd_line | grep -q ' Up ' && [ "$(our_bfd | cut -d' ' -f1)" = up ]; then return 0; fi
    sleep 0.1
  done
  echo "BFD not Up: BIRD '$(bfd_line)', pathosd '$(our_bfd || true)'" >&2
  return 1
}

stall() {
  : >"$tmp/vips.uci"
  for i in $(seq 1 "$stall_vips"); do
    printf "config vip 'v%d'\n\toption prefix '10.198.%d.%d/32'\n\toption always '1'\n\n" "$i" $((i / 256)) $((i % 256)) >>"$tmp/vips.uci"
  done
  pathosd_uci "$tmp/vips.uci" >"$tmp/pathosd.uci"
  : >"$tmp/gone"
  for r in $(seq 1 "$stall_runs"); do
    start_bird
    "$bin" run --config "$tmp/pathosd.uci" >"$tmp/pathosd.log" 2>&1 &
    pd=$!
    pids+=("$pd")
    until_routes "$stall_vips" 30 || { echo "routes never reached BIRD" >&2; tail "$tmp/pathosd.log" >&2; exit 1; }
    until_bfd_up
    t0=$(now)
    kill -STOP "$pd"
    until_routes 0 15 || { echo "BIRD kept the stalled daemon's routes for 15 s" >&2; kill -CONT "$pd"; exit 1; }
    t1=$(now)
    kill -CONT "$pd"
    until_routes "$stall_vips" 30 || { echo "routes not back 30 s after SIGCONT" >&2; exit 1; }
    gone=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
    echo "$gone" >>"$tmp/gone"
    printf 'stall run %d: %d VIPs gone at BIRD %s ms after SIGSTOP\n' "$r" "$stall_vips" "$gone"
    stop "$pd"
    forget "$pd"
    stop "$bird_pid"
    forget "$bird_pid"
  done
  sort -n "$tmp/gone" | awk -v runs="$stall_runs" -v vips="$stall_vips" '
    { a[NR] = $1 }
    END {
      p99 = a[int(NR * 0.99 + 0.999)]; if (p99 == "") p99 = a[NR]
      printf "stall: %d runs, %d VIPs, BFD 100 ms x 3: every VIP gone at BIRD after SIGSTOP min / p50 / p99 / max %d / %d / %d / %d ms\n",
        runs, vips, a[1], a[int((NR + 1) / 2)], p99, a[NR]
    }'
}

churn() {
  local target_port=$((port + 2000)) vips=1000 i flaps=0 since last_since state downs reloads=0 interval=1s
  : >"$tmp/vips.uci"
  for i in $(seq 1 $vips); do
    printf "config vip 'c%d'\n\toption prefix '10.198.%d.%d/32'\n\toption fail_action 'withdraw'\n\n" "$i" $((i / 256)) $((i % 256)) >>"$tmp/vips.uci"
    printf "config check 'c%d_tcp'\n\toption vip 'c%d'\n\toption type 'tcp'\n\toption host '%s'\n\toption port '%d'\n\toption interval '%s'\n\toption timeout '500ms'\n\toption rise '1'\n\toption fall '1'\n\n" \
      "$i" "$i" "$net.3" "$target_port" "$interval" >>"$tmp/vips.uci"
  done
  pathosd_uci "$tmp/vips.uci" >"$tmp/pathosd.uci"
  # The target: a listener that this script turns on and off every 2 s.
  python3 - "$net.3" "$target_port" "$churn_secs" <<'PY' &
import socket, sys, time
host, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + secs + 5
while time.monotonic() < end:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(1024); s.settimeout(0.05)
    on_until = time.monotonic() + 2
    while time.monotonic() < on_until:
        try:
            c, _ = s.accept(); c.close()
        except OSError:
            pass
    s.close()
    time.sleep(2)
PY
  pids+=("$!")
  start_bird
  "$bin" run --config "$tmp/pathosd.uci" >"$tmp/pathosd.log" 2>&1 &
  pd=$!
  pids+=("$pd")
  until_bfd_up
  last_since=$(bfd_line | awk '{ print $4 }')
  local t_end next_reload max_routes=0 min_routes=$vips r
  t_end=$(awk -v s="$churn_secs" -v t="$(now)" 'BEGIN { printf "%.3f", t + s }')
  next_reload=$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 3 }')
  while awk -v d="$t_end" -v t="$(now)" 'BEGIN { exit !(t < d) }'; do
    state=$(bfd_line | awk '{ print $3 }')
    since=$(bfd_line | awk '{ print $4 }')
    if [ "$state" != Up ] || [ "$since" != "$last_since" ]; then
      flaps=$((flaps + 1))
      echo "churn: BFD at BIRD $state since $since (was Up since $last_since)" >&2
      last_since=$since
    fi
    r=$(routes)
    [ "${r:-0}" -gt "$max_routes" ] && max_routes=$r
    [ "${r:-0}" -lt "$min_routes" ] && min_routes=$r
    if awk -v d="$next_reload" -v t="$(now)" 'BEGIN { exit !(t >= d) }'; then
      if [ "$interval" = 1s ]; then interval=2s; else interval=1s; fi
      sed -i "s/option interval '[12]s'/option interval '$interval'/" "$tmp/pathosd.uci"
      kill -HUP "$pd"
      reloads=$((reloads + 1))
      next_reload=$(awk -v t="$(now)" 'BEGIN { printf "%.3f", t + 3 }')
    fi
    sleep 0.1
  done
  read -r state downs < <(our_bfd)
  bgp_since=$(birdc_ show protocols pathosd | awk '$1 == "pathosd" { print $5 }')
  printf 'churn: %d s, %d VIPs flapping in bursts (routes at BIRD between %d and %d), %d reloads: BFD flaps seen at BIRD %d, pathosd BFD %s with %s downs, BIRD BGP up since %s (BFD since %s)\n' \
    "$churn_secs" "$vips" "$min_routes" "$max_routes" "$reloads" "$flaps" "$state" "$downs" "$bgp_since" "$last_since"
  if [ "$flaps" != 0 ] || [ "$downs" != 0 ]; then echo "churn: BFD flapped" >&2; exit 1; fi
  stop "$pd"
  forget "$pd"
  stop "$bird_pid"
  forget "$bird_pid"
}

echo "pathosd: $bin; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in "${what[@]}"; do "$w"; done
