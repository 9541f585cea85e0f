#!/usr/bin/env bash
# The BIRD peering recipes of docs/openwrt.md, layouts (a) and (b), run for real:
# Debian's BIRD with the first ```bird block of the docs (which is
# examples/openwrt-bird.conf) and pathosd with the matching UCI file, on
# loopback addresses of its own. Checks that:
#   * the session establishes;
#   * the import filter accepts the listed VIPs with preference 250 and the
#     next hop rewritten to the VIP, and rejects a VIP outside the set;
#   * a drained VIP arrives pessimized (AS path 65001 x 7) through BIRD;
#   * BFD comes up at both ends (the recipe's protocol bfd and the
#     neighbor's bfd options);
#   * a pathosd stalled by SIGSTOP loses its routes when BIRD's BFD stops
#     hearing it (within 1 s, long before the hold time), and is taken back
#     within 2 s of SIGCONT (the recipe's error wait time);
#   * SIGTERM makes pathosd withdraw, close the session and exit within procd's
#     5 s term_timeout;
#   * layout (b), the docs' second block: BIRD dials a passive pathosd on its
#     own port, and the VIP arrives the same way.
#
# Deviations from the doc, so the test can share a machine: the kernel
# protocol is left out (no FIB changes), BIRD logs to a file and uses its own
# control socket, the addresses are 127.77.N.1/.2 instead of 127.0.0.1/.2,
# and BIRD listens on a high port instead of 179.
#
# usage: bird_recipe_test.sh PATHOSD_BINARY. Prints ok / not ok lines; a
# missing binary, bird or birdc is a failure (exit 1), never a skip.
set -uo pipefail
BIN=${1:?usage: bird_recipe_test.sh PATHOSD_BINARY}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"

N=$(($$ % 200 + 20))
BIRD_IP=127.77.$N.1
PD_IP=127.77.$N.2
PORT=$((11000 + $$ % 900))
API_PORT=$((PORT + 1000))
VIP_DNS=10.77.$N.53
VIP_WEB=10.77.$N.80
VIP_OUT=10.77.$N.99

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-bird.XXXXXX") || exit 1
BIRD_PID=
PD_PID=
BIRD_B_PID=
PD_B_PID=
cleanup() {
	local p
	for p in "$PD_PID" "$PD_B_PID"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
	for p in "$BIRD_PID" "$BIRD_B_PID"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -f "$BIN" ] || [ ! -x "$BIN" ]; then
	not_ok "pathosd binary $BIN exists and is executable"
	exit 1
fi
for tool in bird birdc curl node; do
	command -v "$tool" >/dev/null || { not_ok "$tool is installed (scripts/install-test-deps.sh)"; exit 1; }
done

# --- BIRD: the doc's first block, adapted as said above ------------------------
awk '/^```bird[[:space:]]*$/ { n++; next } /^```/ { if (n == 1) exit } n == 1' "$ROOT/docs/openwrt.md" >"$TMP/doc.conf"
if ! grep -q 'protocol bgp pathosd' "$TMP/doc.conf"; then
	not_ok "docs/openwrt.md's first BIRD block is the pathosd session"
	exit 1
fi
if out=$(diff -u "$ROOT/examples/openwrt-bird.conf" "$TMP/doc.conf"); then
	ok "docs/openwrt.md's first BIRD block is examples/openwrt-bird.conf"
else
	not_ok "docs/openwrt.md's first BIRD block is examples/openwrt-bird.conf" "$out"
fi
awk -v bird="$BIRD_IP" -v pd="$PD_IP" -v port="$PORT" -v dns="$VIP_DNS" -v web="$VIP_WEB" -v logf="$TMP/bird.log" '
	/^protocol kernel/ { skip = 1 }
	skip { if ($0 ~ /^}/) skip = 0; next }
	/^log / { print "log \"" logf "\" all;"; next }
	{
		gsub(/127\.0\.0\.1 as/, bird " port " port " as")
		gsub(/127\.0\.0\.2/, pd)
		gsub(/192\.168\.1\.53\/32, 192\.168\.1\.80\/32/, dns "/32, " web "/32")
		print
	}' "$TMP/doc.conf" >"$TMP/bird.conf"
bird -p -c "$TMP/bird.conf" || { not_ok "adapted BIRD config parses" "$(cat "$TMP/bird.conf")"; exit 1; }
bird -f -c "$TMP/bird.conf" -s "$TMP/bird.ctl" -P "$TMP/bird.pid" >"$TMP/bird.out" 2>&1 &
BIRD_PID=$!

birdc_() { birdc -s "$TMP/bird.ctl" "$@" 2>&1; }

# shellcheck source=tests/packaging/wait.sh
. "$(dirname "$0")/wait.sh"

# pathosd dials once BIRD listens: a refused first dial would double its
# back-off, and the stall below measures the back-off of a clean start.
if ! wait_for 20 'pathosd +BGP .*(Passive|Established)' birdc_ show protocols pathosd; then
	not_ok "BIRD runs the pathosd protocol" "$(cat "$TMP/last.out")" "$(cat "$TMP/bird.out")"
	exit 1
fi

# --- pathosd: layout (a) plus VIPs -------------------------------------------
touch "$TMP/web.drain"
cat >"$TMP/pathosd.uci" <<EOF
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.168.1.1'
	option local_address '$PD_IP'
	option listen_port '-1'
	option hold_time '9s'
	option graceful_restart '0'
	option api_listen '$PD_IP:$API_PORT'
	option ubus_socket '$TMP/no-ubusd.sock'
	option log_syslog '0'

config neighbor 'bird'
	option address '$BIRD_IP'
	option port '$PORT'
	option peer_asn '65000'
	option required '1'
	option bfd '1'
	option bfd_desired_minimum_tx_interval '100ms'
	option bfd_required_minimum_receive '100ms'
	option bfd_detection_multiplier '3'

config vip 'dns'
	option prefix '$VIP_DNS/32'
	option always '1'

config vip 'web'
	option prefix '$VIP_WEB/32'
	option fail_action 'lower_priority'
	option lower_priority_file '$TMP/web.drain'

config check 'web_ok'
	option vip 'web'
	option type 'exec'
	option command '/bin/true'
	option interval '1s'
	option timeout '500ms'

config vip 'outside'
	option prefix '$VIP_OUT/32'
	option always '1'
EOF
if out=$("$BIN" validate --config "$TMP/pathosd.uci" 2>&1); then
	ok "pathosd validate accepts the layout (a) config"
else
	not_ok "pathosd validate accepts the layout (a) config" "$out"
fi
"$BIN" run --config "$TMP/pathosd.uci" >"$TMP/pathosd.log" 2>&1 &
PD_PID=$!

if wait_for 20 'BGP state: +Established' birdc_ show protocols all pathosd; then
	ok "session pathosd (AS 65001, active) <-> BIRD (AS 65000, passive, strict bind, multihop) established"
else
	not_ok "session established" "$(cat "$TMP/last.out")" "pathosd: $(tail -n 20 "$TMP/pathosd.log")"
fi

if wait_for 20 "$VIP_WEB/32" birdc_ show route protocol pathosd all; then
	routes=$(birdc_ show route protocol pathosd all)
	# One route block per prefix: from its line to the next prefix line.
	block() { awk -v p="$1/32" 'index($0, p) == 1 { on = 1; print; next } /^[0-9]/ && on { exit } on' <<<"$routes"; }
	dns=$(block "$VIP_DNS")
	web=$(block "$VIP_WEB")
	if grep -Eq '\(250\)' <<<"$dns" && grep -Eq "BGP.next_hop: $VIP_DNS\$" <<<"$dns"; then
		ok "VIP in the set accepted with preference 250, next hop rewritten to the VIP"
	else
		not_ok "VIP in the set accepted with preference 250, next hop rewritten to the VIP" "$routes"
	fi
	if grep -Eq 'BGP.as_path: 65001 65001 65001 65001 65001 65001 65001$' <<<"$web"; then
		ok "drained VIP reaches BIRD pessimized: AS path 65001 + 6 prepends"
	else
		not_ok "drained VIP reaches BIRD pessimized: AS path 65001 + 6 prepends" "$web"
	fi
	if grep -q "$VIP_OUT" <<<"$routes"; then
		not_ok "VIP outside the filter's set rejected" "$routes"
	else
		ok "VIP outside the filter's set rejected"
	fi
else
	not_ok "VIP routes reach BIRD" "$(cat "$TMP/last.out")" "pathosd: $(tail -n 20 "$TMP/pathosd.log")"
fi

# The LuCI status view against what this daemon really answers.
if curl -sf --max-time 5 "http://$PD_IP:$API_PORT/status" -o "$TMP/status.json"; then
	node "$ROOT/tests/packaging/luci_views.test.cjs" --live "$TMP/status.json" | sed 's/^ok - /ok - live: /; s/^not ok - /not ok - live: /'
	[ "${PIPESTATUS[0]}" = 0 ] || failures=$((failures + 1))
else
	not_ok "GET /status on the API" "$(tail -n 20 "$TMP/pathosd.log")"
fi

if wait_for 20 "^$PD_IP +--- +Up " birdc_ show bfd sessions &&
	wait_for 10 '"up"' sh -c "curl -sf --max-time 5 'http://$PD_IP:$API_PORT/status' |
		node -e 'let s = \"\"; process.stdin.on(\"data\", d => s += d).on(\"end\", () => console.log(JSON.stringify(JSON.parse(s).peers[0].bfd.state)))'"; then
	ok "BFD session Up at BIRD and at pathosd"
else
	not_ok "BFD session Up at BIRD and at pathosd" "$(cat "$TMP/last.out")" "$(curl -s --max-time 5 "http://$PD_IP:$API_PORT/status")"
fi

# --- a stalled pathosd: gone after BFD's detection time, back at once after SIGCONT
now_ms() { date +%s%3N; }
# Polls BIRD every 10 ms until the dns VIP is (want 1) or is not (want 0)
# there, for at most $2 ms; prints the milliseconds waited.
route_wait() {
	local want=$1 limit=$2 start t
	start=$(now_ms)
	while :; do
		t=$(($(now_ms) - start))
		if birdc_ show route protocol pathosd | grep -q "^$VIP_DNS/32"; then
			[ "$want" = 1 ] && { echo "$t"; return 0; }
		else
			[ "$want" = 0 ] && { echo "$t"; return 0; }
		fi
		[ "$t" -gt "$limit" ] && { echo "$t"; return 1; }
		sleep 0.01
	done
}
kill -STOP "$PD_PID"
# BFD's 300 ms plus the poll on a loaded machine; the hold time is 9 s.
if gone=$(route_wait 0 1000); then
	ok "SIGSTOP: BIRD drops the stalled pathosd's routes when BFD stops hearing it ($gone ms)"
else
	not_ok "SIGSTOP: BIRD drops the stalled pathosd's routes within 1 s (BFD)" "$(birdc_ show protocols all pathosd)"
fi
why=$(birdc_ show protocols all pathosd)
# SIGCONT as soon as the routes are gone: BIRD's error wait time, which
# starts at the hold timer's expiry, would still be running.
kill -CONT "$PD_PID"
if back=$(route_wait 1 2000); then
	ok "SIGCONT: BIRD takes pathosd back within 2 s ($back ms)"
else
	not_ok "SIGCONT: BIRD takes pathosd back within 2 s (not after $back ms)" \
		"$(birdc_ show protocols all pathosd)" "pathosd: $(tail -n 20 "$TMP/pathosd.log")"
fi
grep -q 'Last error: .*BFD session down' <<<"$why" ||
	not_ok "BIRD ended the session because BFD went down" "$why"
wait_for 20 "$VIP_WEB/32" birdc_ show route protocol pathosd ||
	not_ok "both VIPs back at BIRD after the stall" "$(cat "$TMP/last.out")"

# --- SIGTERM: withdraw and Cease within procd's term_timeout ------------------
start=$SECONDS
kill -TERM "$PD_PID"
exited=0
for _ in $(seq 1 50); do
	if ! kill -0 "$PD_PID" 2>/dev/null; then exited=1; break; fi
	sleep 0.1
done
if [ "$exited" = 1 ]; then
	wait "$PD_PID"
	rc=$?
	PD_PID=
	if [ "$rc" = 0 ]; then
		ok "SIGTERM: pathosd exits 0 within 5 s ($((SECONDS - start)) s)"
	else
		not_ok "SIGTERM: pathosd exits 0 within 5 s" "exit $rc" "$(tail -n 20 "$TMP/pathosd.log")"
	fi
else
	not_ok "SIGTERM: pathosd exits within 5 s (procd would SIGKILL it)" "$(tail -n 20 "$TMP/pathosd.log")"
fi
if wait_for 10 'Received: .*([Ss]hutdown|Cease)|BGP state: +(Passive|Idle|Active)' birdc_ show protocols all pathosd &&
	! birdc_ show route protocol pathosd | grep -q "$VIP_DNS"; then
	ok "BIRD saw the session closed and dropped the VIP routes"
else
	not_ok "BIRD saw the session closed and dropped the VIP routes" "$(birdc_ show protocols all pathosd)"
fi

# --- layout (b): BIRD dials a passive pathosd on its own port -----------------
# BIRD listens on a port of its own too: port 179 on every address may be
# another test's.
PORT_B=$((PORT + 2000))
awk '/^```bird[[:space:]]*$/ { n++; next } /^```/ { if (n == 2) exit } n == 2' "$ROOT/docs/openwrt.md" >"$TMP/doc-b.conf"
if ! grep -q 'neighbor 127.0.0.2 port 1179 as 65001' "$TMP/doc-b.conf"; then
	not_ok "docs/openwrt.md's second BIRD block is layout (b)" "$(cat "$TMP/doc-b.conf")"
	exit 1
fi
{
	echo "log \"$TMP/bird-b.log\" all;"
	echo 'router id 192.168.1.1;'
	echo 'protocol device { }'
	sed -e "s/local 127\.0\.0\.1 as/local $BIRD_IP port $((PORT_B + 1)) as/" \
		-e "s/127\.0\.0\.2 port 1179/$PD_IP port $PORT_B/" \
		-e "s#192\.168\.1\.53/32#$VIP_DNS/32#" "$TMP/doc-b.conf"
} >"$TMP/bird-b.conf"
cat >"$TMP/pathosd-b.uci" <<UCI
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.168.1.1'
	option local_address '$PD_IP'
	option listen_address '$PD_IP'
	option listen_port '$PORT_B'
	option api_listen '$PD_IP:$((API_PORT + 1))'
	option ubus_socket '$TMP/no-ubusd.sock'
	option log_syslog '0'

config neighbor 'bird_local'
	option address '$BIRD_IP'
	option peer_asn '65000'
	option passive '1'
	option required '1'

config vip 'dns'
	option prefix '$VIP_DNS/32'
	option always '1'
UCI
# pathosd listens before BIRD's first connect, so that BIRD's first dial
# succeeds. "started" is logged once the listener is bound; a loaded machine
# can take a while to get there.
"$BIN" run --config "$TMP/pathosd-b.uci" >"$TMP/pathosd-b.log" 2>&1 &
PD_B_PID=$!
if ! wait_for 60 'started' cat "$TMP/pathosd-b.log"; then
	not_ok "layout (b): pathosd started within 60 s" "$(tail -n 20 "$TMP/pathosd-b.log")"
	exit 1
fi
bird -f -c "$TMP/bird-b.conf" -s "$TMP/bird-b.ctl" -P "$TMP/bird-b.pid" >"$TMP/bird-b.out" 2>&1 &
BIRD_B_PID=$!
birdc_b() { birdc -s "$TMP/bird-b.ctl" "$@" 2>&1; }
if wait_for 30 'BGP state: +Established' birdc_b show protocols all peer_pathosd_local; then
	ok "layout (b): BIRD dials the passive pathosd on its own port, established"
else
	not_ok "layout (b): BIRD dials the passive pathosd on its own port, established" "$(cat "$TMP/last.out")" \
		"pathosd: $(tail -n 20 "$TMP/pathosd-b.log")" "bird: $(cat "$TMP/bird-b.out")"
fi
if wait_for 20 "^$VIP_DNS/32 .*\(250\)" birdc_b show route protocol peer_pathosd_local; then
	ok "layout (b): VIP accepted with preference 250"
else
	not_ok "layout (b): VIP accepted with preference 250" "$(cat "$TMP/last.out")"
fi

[ "$failures" = 0 ]
