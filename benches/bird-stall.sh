#!/usr/bin/env bash
# A stalled pathosd against the router's BIRD of the recipe
# (examples/openwrt-bird.conf, docs/openwrt.md): pathosd is frozen with
# SIGSTOP, BIRD's hold timer drops its route, and pathosd gets SIGCONT as
# soon as the route is gone (the worst moment for BIRD's `error wait time`,
# which starts at the hold timer's expiry). Per run it prints how long BIRD
# kept the stalled daemon's route and how long after SIGCONT the route was
# back, then min / median / max of each.
#
# Two kinds of session, since pathosd's own back-off could decide its
# redial:
#   young   Established for less than the neighbor's error_wait_max (60 s
#           by default): after a peer's error pathosd would redial after
#           error_wait_min (1 s, less a random 0-25 %), but its KEEPALIVE
#           is seconds overdue after a stall, so it knows the stall was its
#           own and redials at once;
#   stable  Established for longer (error_wait_max '2s' here, the stall
#           after 3 s): pathosd redials at once in any case, as on a router
#           that has been up a while.
# benches/stop-timing.sh measures the same against ExaBGP, with p50/p99.
# BASELINE=1 runs BIRD's default error wait (60 s) instead of the recipe's
# line, to show what the line is for (a run then takes over a minute).
#
# BIRD's block is the example's, with a private log, control socket,
# addresses 127.199.N.1 (BIRD) and .2 (pathosd), a high port and no kernel
# protocol. Every wait is bounded; a trap stops every process this script
# started, by PID.
#
# usage: benches/bird-stall.sh [RUNS] [young|stable...]   (default: 5 young stable)
# env: PATHOSD_BIN (default target/debug/pathosd), BASELINE=1.
# Not part of CI: tests/packaging/bird_recipe_test.sh asserts one young run.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

runs=${1:-5}
shift || true
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(young stable)
bin=${PATHOSD_BIN:-target/debug/pathosd}
[ -x "$bin" ] || { echo "no pathosd at $bin (cargo build --bin pathosd)" >&2; exit 1; }
need_tools bird birdc

n=$(($$ % 200 + 20))
net=127.199.$n
port=$((14000 + $$ % 900))
vip=10.199.$n.53
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-stall.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT

awk -v bird="$net.1" -v pd="$net.2" -v port="$port" -v vip="$vip" -v logf="$tmp/bird.log" -v base="${BASELINE:-}" '
	/^protocol kernel/ { skip = 1 }
	skip { if ($0 ~ /^}/) skip = 0; next }
	/^log / { print "log \"" logf "\" all;"; next }
	/error wait time/ && base != "" { next }
	{
		gsub(/127\.0\.0\.1 as/, bird " port " port " as")
		gsub(/127\.0\.0\.2/, pd)
		gsub(/192\.168\.1\.53\/32, 192\.168\.1\.80\/32/, vip "/32")
		print
	}' examples/openwrt-bird.conf >"$tmp/bird.conf"
bird -p -c "$tmp/bird.conf"

has_route() { birdc -s "$tmp/bird.ctl" show route protocol pathosd 2>/dev/null | grep -q "^$vip/32"; }
# Polls until has_route says $1 (0 present, 1 gone), at most $2 seconds.
until_route() {
  local want=$1 deadline
  deadline=$(awk -v s="$2" -v t="$(now)" 'BEGIN { printf "%.3f", t + s }')
  while :; do
    if has_route; then [ "$want" = 0 ] && return 0; else [ "$want" = 1 ] && return 0; fi
    awk -v d="$deadline" -v t="$(now)" 'BEGIN { exit !(t > d) }' && return 1
    sleep 0.01
  done
}

median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.3f", a[int((NR + 1) / 2)] }'; }

for kind in "${kinds[@]}"; do
  case $kind in
    young) ewmax=60s settle=0 ;;
    stable) ewmax=2s settle=3 ;;
    *) echo "unknown kind $kind" >&2; exit 1 ;;
  esac
  : >"$tmp/gone" && : >"$tmp/back"
  for r in $(seq 1 "$runs"); do
    bird -f -c "$tmp/bird.conf" -s "$tmp/bird.ctl" -P "$tmp/bird.pid" >"$tmp/bird.out" 2>&1 &
    bird_pid=$!
    pids+=("$bird_pid")
    wait_ctl "$tmp/bird.ctl"
    cat >"$tmp/pathosd.uci" <<EOF
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.168.1.1'
	option local_address '$net.2'
	option listen_port '-1'
	option hold_time '9s'
	option graceful_restart '0'
	option api_listen ''
	option ubus_socket '$tmp/no-ubusd.sock'
	option log_syslog '0'

config neighbor 'bird'
	option address '$net.1'
	option port '$port'
	option peer_asn '65000'
	option error_wait_max '$ewmax'

config vip 'dns'
	option prefix '$vip/32'
	option always '1'
EOF
    "$bin" run --config "$tmp/pathosd.uci" >"$tmp/pathosd.log" 2>&1 &
    pd=$!
    pids+=("$pd")
    until_route 0 30 || { echo "route never reached BIRD" >&2; tail "$tmp/pathosd.log" >&2; exit 1; }
    sleep "$settle"
    t0=$(now)
    kill -STOP "$pd"
    until_route 1 30 || { echo "BIRD kept the stalled daemon's route for 30 s" >&2; exit 1; }
    t1=$(now)
    kill -CONT "$pd"
    t2=$(now)
    until_route 0 120 || { echo "route not back 120 s after SIGCONT" >&2; tail "$tmp/bird.log" >&2; exit 1; }
    t3=$(now)
    gone=$(elapsed "$t0" "$t1")
    back=$(elapsed "$t2" "$t3")
    echo "$gone" >>"$tmp/gone"
    echo "$back" >>"$tmp/back"
    printf '%-6s run %d: route gone %s s after SIGSTOP, back %s s after SIGCONT\n' "$kind" "$r" "$gone" "$back"
    stop "$pd"
    forget "$pd"
    stop "$bird_pid"
    forget "$bird_pid"
  done
  printf '%-6s %s runs%s: gone after SIGSTOP min/median/max %s / %s / %s s; back after SIGCONT %s / %s / %s s\n' \
    "$kind" "$runs" "${BASELINE:+ (BIRD default error wait)}" \
    "$(sort -n "$tmp/gone" | head -1)" "$(median <"$tmp/gone")" "$(sort -n "$tmp/gone" | tail -1)" \
    "$(sort -n "$tmp/back" | head -1)" "$(median <"$tmp/back")" "$(sort -n "$tmp/back" | tail -1)"
done
