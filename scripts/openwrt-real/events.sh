#!/usr/bin/env bash
# How fast procd's service events withdraw a VIP, on OpenWrt's real procd
# (PID 1 of a booted root, boot.sh) and ubusd, with BIRD on the host:
#
#   scripts/openwrt-real/events.sh --out OUT --src SRC --work DIR [--bin PATHOSD] [--rounds N]
#
# OUT and SRC are build.sh's. The root (DIR/root, remade) gets a procd
# service `dummy` (one instance, /bin/sleep). pathosd (--bin, default
# target/debug/pathosd: the host's build) runs on the host with
# api.ubus_socket on the root's ubusd (/proc/PID1/root/var/run/ubus/ubus.sock)
# and one VIP, 10.89.0.53/32, with `services: ["dummy"]`, fail_action
# withdraw and an exec check every 10 s (fall 3). BIRD listens passive on
# 127.89.0.1:11790 (a port of its own: other BGP tests may hold *:179);
# pathosd dials from 127.89.0.2.
#
# Each round: `/etc/init.d/dummy stop` inside the root, then the time until
# BIRD has no route for the VIP (birdc asked as fast as it answers); then
# `/etc/init.d/dummy start` and the time until the route is back. The stop's
# time runs from just before the init script is started inside the root, so
# it includes rc.common and its `ubus call service delete`. Prints each
# round, then the median and p99 (the largest of 20) of both; the status is
# 1 if a round did not complete within 10 s. Everything started here is
# ended by its PID.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BOOT="$HERE/boot.sh"
OUT='' SRC='' WORK='' BIN="$REPO/target/debug/pathosd" ROUNDS=20
while [ "$#" -gt 0 ]; do
	case "$1" in
		--out) OUT=$2; shift 2 ;;
		--src) SRC=$2; shift 2 ;;
		--work) WORK=$2; shift 2 ;;
		--bin) BIN=$2; shift 2 ;;
		--rounds) ROUNDS=$2; shift 2 ;;
		*) echo "usage: $0 --out OUT --src SRC --work DIR [--bin PATHOSD] [--rounds N]" >&2; exit 2 ;;
	esac
done
die() { echo "openwrt-real/events: $*" >&2; exit 2; }
if [ -z "$OUT" ] || [ -z "$SRC" ] || [ -z "$WORK" ]; then die "--out, --src and --work are needed"; fi
[ -x "$BIN" ] || die "no pathosd at $BIN"
for t in bird birdc; do command -v "$t" >/dev/null || die "$t is missing"; done
mkdir -p "$WORK"
ROOT="$WORK/root"
BIRD_DIR="$WORK/bird"
BIRD_SOCK="$BIRD_DIR/bird.ctl"
VIP=10.89.0.53/32
STARTED=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	bash "$BOOT" pid "$ROOT" >/dev/null 2>&1 && bash "$BOOT" stop "$ROOT" >/dev/null 2>&1
	for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bash "$BOOT" root "$ROOT" "$OUT" "$SRC" >/dev/null || die "boot.sh root failed"
cat >"$ROOT/etc/init.d/dummy" <<'SCRIPT'
#!/bin/sh /etc/rc.common
START=99
USE_PROCD=1
start_service() {
	procd_open_instance
	procd_set_param command /bin/sleep 100000
	procd_close_instance
}
SCRIPT
chmod +x "$ROOT/etc/init.d/dummy"
P1=$(bash "$BOOT" start "$ROOT") || die "boot.sh start failed"
SOCK="/proc/$P1/root/var/run/ubus/ubus.sock"
for _ in $(seq 1 100); do
	bash "$BOOT" exec "$ROOT" 'ubus -t 1 list service' >/dev/null 2>&1 && break
	sleep 0.1
done
bash "$BOOT" exec "$ROOT" '/etc/init.d/dummy start' || die "dummy does not start"

rm -rf "$BIRD_DIR"
mkdir -p "$BIRD_DIR"
cat >"$BIRD_DIR/bird.conf" <<CONF
router id 127.89.0.1;
log "$BIRD_DIR/bird.log" all;
protocol device {}
protocol bgp pathosd {
	local 127.89.0.1 port 11790 as 65000;
	neighbor 127.89.0.2 port 11790 as 65001;
	passive on;
	strict bind on;
	multihop;
	error wait time 0, 0;
	ipv4 {
		import filter {
			if net ~ [ 10.89.0.0/16{32,32} ] then { bgp_next_hop = net.ip; accept; }
			reject;
		};
		export none;
	};
}
CONF
bird -f -c "$BIRD_DIR/bird.conf" -s "$BIRD_SOCK" -P "$BIRD_DIR/bird.pid" >"$BIRD_DIR/bird.out" 2>&1 &
STARTED+=("$!")

cat >"$WORK/pathosd.json" <<CONF
{
  "schema": "v1",
  "router": {"asn": 65001, "router_id": "127.89.0.2", "local_address": "127.89.0.2"},
  "bgp": {"listen_port": 11791, "neighbors": [{"name": "bird", "address": "127.89.0.1", "port": 11790, "peer_asn": 65000, "enable_multihop": true}]},
  "api": {"listen": "127.89.0.2:59179", "ubus_socket": "$SOCK"},
  "logging": {"level": "info", "syslog": false, "timestamps": true},
  "vips": [{"name": "dns", "prefix": "$VIP", "services": ["dummy"], "policy": {"fail_action": "withdraw"},
            "check": {"type": "exec", "interval": "10s", "timeout": "2s", "rise": 1, "fall": 3, "exec": {"command": "/bin/true"}}}]
}
CONF
"$BIN" run --config "$WORK/pathosd.json" >"$WORK/pathosd.log" 2>&1 &
STARTED+=("$!")

has_route() { birdc -s "$BIRD_SOCK" show route "$VIP" 2>/dev/null | grep -q "^${VIP%/32}/32\|^$VIP"; }
now_ns() { date +%s%N; }
# Waits until has_route says $1 (0: there, 1: gone); prints the ms since $2.
until_route() {
	local want=$1 t0=$2 end=$(($(date +%s) + 10))
	while :; do
		has_route
		if [ "$?" = "$want" ]; then
			echo $((($(now_ns) - t0) / 1000000))
			return 0
		fi
		[ "$(date +%s)" -lt "$end" ] || return 1
	done
}
until_route 0 "$(now_ns)" >/dev/null || die "the VIP never reached BIRD: $(tail -5 "$WORK/pathosd.log")"
for _ in $(seq 1 50); do grep -q 'watching procd' "$WORK/pathosd.log" && break; sleep 0.1; done
grep -q 'watching procd' "$WORK/pathosd.log" || die "pathosd does not watch procd: $(tail -5 "$WORK/pathosd.log")"

STOPS=() STARTS=() FAILED=0
for r in $(seq 1 "$ROUNDS"); do
	t0=$(now_ns)
	bash "$BOOT" exec "$ROOT" '/etc/init.d/dummy stop' &
	job=$!
	gone=$(until_route 1 "$t0") || { echo "round $r: not withdrawn"; FAILED=1; wait "$job"; break; }
	wait "$job"
	t0=$(now_ns)
	bash "$BOOT" exec "$ROOT" '/etc/init.d/dummy start' &
	job=$!
	back=$(until_route 0 "$t0") || { echo "round $r: not back"; FAILED=1; wait "$job"; break; }
	wait "$job"
	echo "round $r: stop -> gone at BIRD ${gone} ms, start -> back ${back} ms"
	STOPS+=("$gone") STARTS+=("$back")
done
if [ "$FAILED" = 1 ]; then
	echo "# root's log:"
	bash "$BOOT" exec "$ROOT" '/sbin/logread | tail -n 15' 2>&1
	echo "# pathosd's log:"
	grep -v DEBUG "$WORK/pathosd.log" | tail -n 8
fi
stat() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "median %d ms, p99 %d ms (n=%d)", v[int((NR + 1) / 2)], v[NR], NR }'; }
echo "stop -> gone: $(stat "${STOPS[@]}")"
echo "start -> back: $(stat "${STARTS[@]}")"
exit "$FAILED"
