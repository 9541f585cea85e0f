#!/usr/bin/env bash
# Regenerates scripts/hot-text.ld, the list of the functions a running
# pathosd executes, which scripts/cross-build.sh links first and together
# (scripts/hot-text.py says why). Run it when cross-build.sh reports that
# .text.hot holds too few bytes, or after a change that moves much of the
# start-up or idle code, then rebuild and measure (benches/size.sh):
#
#   flock /work/cross.lock scripts/cross-build.sh x86_64-unknown-linux-musl
#   benches/hot-text.sh        # writes scripts/hot-text.ld
#
# It runs the static x86_64 musl build of cross-build.sh under
# `qemu-x86_64 -d in_asm` (which logs each piece of code the first time it
# runs) four times, each with one neighbor, a router BIRD on 127.168.0.1
# (127.168.0.2 pathosd, 127.168.0.4 an HTTP backend): an `always` VIP
# (benches/size.sh's RSS case), a tcp-checked VIP, an HTTP-checked VIP, and
# an `always` VIP next to an HTTP check that fails (nothing listens). Each
# run lasts until the router has the route and IDLE_SECS (45; 10 for the
# failing check) more of the idle daemon (check ticks, and keepalives both
# ways: at the default hold time of 90 s they leave every 30 s, so a 20 s
# window missed them), then a SIGTERM (withdraw, Cease). Every process is
# stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
birdc=birdc
IDLE_SECS=${IDLE_SECS:-45}
dir="${PATHOSD_CROSS_DIR:-target/cross}/out/x86_64-unknown-linux-musl/default"
bin="$dir/pathosd"
for tool in qemu-x86_64-static bird birdc python3 nm; do
	command -v "$tool" >/dev/null || { echo "benches/hot-text.sh needs $tool" >&2; exit 1; }
done
if [ ! -x "$bin" ] || [ ! -f "$bin.full" ]; then
	echo "no $bin(.full): run scripts/cross-build.sh x86_64-unknown-linux-musl first" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-hot.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT
net=127.168.0
port=$((1179 + $$ % 800))
router_bird_conf "$net" "$port" from_pathosd 2 65001 >"$tmp/bird.conf"
bird -f -c "$tmp/bird.conf" -s "$tmp/bird.ctl" -P "$tmp/bird.pid" 2>"$tmp/bird.log" &
pids+=("$!")
wait_ctl "$tmp/bird.ctl"
(cd "$tmp" && exec python3 -m http.server --bind "$net.4" "$port" >/dev/null 2>&1) &
pids+=("$!")

logs=()
for mode in always tcp http http-down; do
	v2=
	secs=$IDLE_SECS
	case $mode in
		always) vip='"always": true' ;;
		tcp) vip="\"check\": { \"type\": \"tcp\", \"interval\": \"1s\", \"rise\": 1, \"tcp\": { \"host\": \"$net.1\", \"port\": $port } }" ;;
		http) vip="\"check\": { \"type\": \"http\", \"interval\": \"1s\", \"rise\": 1, \"http\": { \"url\": \"http://$net.4:$port/\" } }" ;;
		# A failing check's code (connection refused, its message): an
		# `always` VIP to wait for, and an http check of a port nobody
		# listens on, failing every second for 10 s.
		http-down)
			vip='"always": true'
			v2=", { \"name\": \"v2\", \"prefix\": \"10.168.2.2/32\", \"check\": { \"type\": \"http\", \"interval\": \"1s\", \"http\": { \"url\": \"http://$net.4:$((port + 1))/\" } } }"
			secs=10 ;;
	esac
	conf=(--config "$tmp/$mode.json")
	one_neighbor_config "$net" "$port" \
		"{ \"name\": \"v1\", \"prefix\": \"10.168.2.1/32\", $vip }$v2" >"$tmp/$mode.json"
	if [ "$mode" = always ]; then
		# OpenWrt's daemon reads UCI: the loader a router runs is recorded
		# too (from JSON alone, UCI's code lay outside the hot section and
		# cost a UCI start about 190 KiB more than a JSON one).
		conf=(--config "$tmp/$mode.uci" --format uci)
		cat >"$tmp/$mode.uci" <<-EOF
			config pathosd 'main'
				option asn '65001'
				option router_id '$net.2'
				option local_address '$net.2'
				option listen_port '-1'
				option api_listen ''
				option log_level 'warn'

			config neighbor 'router'
				option address '$net.1'
				option port '$port'
				option peer_asn '65000'
				option enable_multihop '1'

			config vip 'v1'
				option prefix '10.168.2.1/32'
				option always '1'
		EOF
	fi
	qemu-x86_64-static -d in_asm -D "$tmp/$mode.log" "$bin" run "${conf[@]}" \
		>/dev/null 2>"$tmp/$mode.err" &
	pd=$!
	pids+=("$pd")
	ok=
	for _ in $(seq 1 600); do # 30 s at most: qemu translates every block first
		if birdc -s "$tmp/bird.ctl" show route 10.168.2.1/32 2>/dev/null | grep -q "^10.168.2.1/32"; then
			ok=1
			break
		fi
		alive "$pd" || break
		sleep 0.05
	done
	[ -n "$ok" ] || { cat "$tmp/$mode.err" >&2; echo "$mode: no route at the router within 30 s" >&2; exit 1; }
	sleep "$secs" # the idle daemon is what is recorded: no event to await
	stop "$pd"
	forget "$pd"
	# The route must be gone before the next run announces it again.
	for _ in $(seq 1 100); do
		birdc -s "$tmp/bird.ctl" show route 10.168.2.1/32 2>/dev/null | grep -q "^10.168.2.1/32" || break
		sleep 0.05
	done
	logs+=("$tmp/$mode.log")
done
python3 scripts/hot-text.py "$bin.full" "${logs[@]}" >"$tmp/hot-text.ld"
mv "$tmp/hot-text.ld" scripts/hot-text.ld
head -n 3 scripts/hot-text.ld
