#!/usr/bin/env bash
# A cross-built pathosd run under qemu-user against the real BIRD (bird2) on
# loopback: proof that a build for another CPU (big-endian mips above all)
# starts, reads every example and speaks correct BGP.
#
#   tests/packaging/qemu_bgp_smoke.sh BINARY QEMU     (e.g. qemu-mips-static)
#
# Checks: `--version`; `validate` on every example (a build without TLS must
# refuse exactly the https checks, naming the package); a session to BIRD
# that establishes; a VIP whose exec check passes reaches `birdc show route`,
# is withdrawn when the check fails while the session stays up, and SIGTERM
# ends pathosd with exit status 0 and a Cease. Addresses 127.121.N.1/.2 and a
# high port of its own; BIRD and pathosd are stopped by PID. Prints
# "ok - NAME" / "not ok - NAME"; exit status 1 if anything failed.
set -uo pipefail
BIN=${1:?usage: qemu_bgp_smoke.sh BINARY QEMU}
QEMU=${2:?usage: qemu_bgp_smoke.sh BINARY QEMU}
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
ARCH=$(basename "$QEMU" | sed 's/^qemu-//; s/-static$//')

TAP_PREFIX="$ARCH: "
# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"
for tool in "$QEMU" bird birdc; do
	command -v "$tool" >/dev/null || { not_ok "$tool is installed"; exit 1; }
done
[ -x "$BIN" ] || { not_ok "$BIN is an executable"; exit 1; }

N=$(($$ % 200 + 20))
BIRD_IP=127.121.$N.1
PD_IP=127.121.$N.2
PORT=$((21000 + $$ % 900))
VIP=10.121.$N.53

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-qemu.XXXXXX") || exit 1
BIRD_PID=
PD_PID=
cleanup() {
	[ -n "$PD_PID" ] && kill -9 "$PD_PID" 2>/dev/null
	[ -n "$BIRD_PID" ] && kill "$BIRD_PID" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

pd() { "$QEMU" "$BIN" "$@"; }

# --- --version and validate ----------------------------------------------------

version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$ROOT/Cargo.toml" | head -n 1)
out=$(pd --version 2>&1)
case "$out" in
	"pathosd $version"$'\n'"features: +tls") tls=1; ok "--version: pathosd $version, features: +tls" ;;
	"pathosd $version"$'\n'"features: -tls") tls=0; ok "--version: pathosd $version, features: -tls" ;;
	*) tls=1; not_ok "--version prints the version and the features" "$out" ;;
esac

for ex in "$ROOT"/examples/*; do
	name=$(basename "$ex")
	# BIRD's side of the recipe (examples/openwrt-bird.conf), which
	# scripts/test-packaging.sh has BIRD parse: not a pathosd file.
	case "$name" in *.conf) continue ;; esac
	out=$(pd validate --config "$ex" 2>&1)
	rc=$?
	if [ "$tls" = 1 ] || ! grep -Eq "\"?https|type 'https'" "$ex"; then
		if [ "$rc" = 0 ]; then ok "validate examples/$name"; else not_ok "validate examples/$name (exit $rc)" "$out"; fi
	else
		# Without TLS every error must be the https check's, naming the package.
		others=$(printf '%s\n' "$out" | sed 1d | grep -v 'needs pathosd built with TLS (package pathosd, not pathosd-nossl)')
		if [ "$rc" = 1 ] && [ -z "$others" ] && [ "$(printf '%s\n' "$out" | wc -l)" -ge 2 ]; then
			ok "validate examples/$name refuses only its https check (no TLS in this build)"
		else
			not_ok "validate examples/$name refuses only its https check (exit $rc)" "$out"
		fi
	fi
done

# --- BIRD ------------------------------------------------------------------------

cat >"$TMP/bird.conf" <<EOF
router id 192.0.2.254;
log "$TMP/bird.log" all;
protocol device {}
protocol bgp pathosd {
	local $BIRD_IP port $PORT as 65000;
	neighbor $PD_IP as 65001;
	passive on;
	multihop;
	ipv4 {
		import filter {
			if net ~ [ $VIP/32 ] then { bgp_next_hop = net.ip; accept; }
			reject;
		};
		export none;
	};
}
EOF
bird -p -c "$TMP/bird.conf" || { not_ok "BIRD config parses" "$(cat "$TMP/bird.conf")"; exit 1; }
bird -f -c "$TMP/bird.conf" -s "$TMP/bird.ctl" -P "$TMP/bird.pid" >"$TMP/bird.out" 2>&1 &
BIRD_PID=$!
birdc_() { birdc -s "$TMP/bird.ctl" "$@" 2>&1; }

# --- pathosd under qemu ---------------------------------------------------------

touch "$TMP/up"
cat >"$TMP/pathosd.uci" <<EOF
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.0.2.2'
	option local_address '$PD_IP'
	option listen_port '-1'
	option hold_time '9s'
	option api_listen '$PD_IP:$((PORT + 1000))'
	option ubus_socket '$TMP/no-ubusd.sock'
	option log_syslog '0'

config neighbor 'bird'
	option address '$BIRD_IP'
	option port '$PORT'
	option peer_asn '65000'

config vip 'dns'
	option prefix '$VIP/32'
	option fail_action 'withdraw'

config check 'up'
	option vip 'dns'
	option type 'exec'
	option command '/bin/sh'
	list arg '-c'
	list arg 'test -e $TMP/up'
	option interval '1s'
	option timeout '800ms'
	option rise '1'
	option fall '1'
EOF
if out=$(pd validate --config "$TMP/pathosd.uci" 2>&1); then
	ok "validate the smoke config"
else
	not_ok "validate the smoke config" "$out"
fi
"$QEMU" "$BIN" run --config "$TMP/pathosd.uci" >"$TMP/pathosd.log" 2>&1 &
PD_PID=$!

# shellcheck source=tests/packaging/wait.sh
. "$(dirname "$0")/wait.sh"
log_tail() { echo "pathosd: $(tail -n 15 "$TMP/pathosd.log")"; }

if wait_for 30 'BGP state: +Established' birdc_ show protocols all pathosd; then
	ok "BGP session to BIRD established"
else
	not_ok "BGP session to BIRD established" "$(cat "$TMP/last.out")" "$(log_tail)"
fi
if wait_for 20 "^$VIP/32 .*AS65001" birdc_ show route protocol pathosd; then
	routes=$(birdc_ show route protocol pathosd all)
	if grep -Eq 'BGP.as_path: 65001$' <<<"$routes" && grep -q 'BGP.origin: IGP' <<<"$routes"; then
		ok "VIP $VIP/32 announced: in birdc show route, AS path 65001, origin IGP"
	else
		not_ok "VIP announced with AS path 65001, origin IGP" "$routes"
	fi
else
	not_ok "VIP $VIP/32 announced (birdc show route)" "$(cat "$TMP/last.out")" "$(log_tail)"
fi

rm -f "$TMP/up"
if wait_for 20 "!$VIP/32" birdc_ show route protocol pathosd; then
	if birdc_ show protocols all pathosd | grep -Eq 'BGP state: +Established'; then
		ok "check fails: VIP withdrawn (UPDATE), session still established"
	else
		not_ok "check fails: VIP withdrawn while the session stays established" "$(birdc_ show protocols all pathosd)"
	fi
else
	not_ok "check fails: VIP withdrawn" "$(cat "$TMP/last.out")" "$(log_tail)"
fi

kill -TERM "$PD_PID"
exited=0
for _ in $(seq 1 100); do
	if ! kill -0 "$PD_PID" 2>/dev/null; then exited=1; break; fi
	sleep 0.1
done
if [ "$exited" = 1 ]; then
	wait "$PD_PID"
	rc=$?
	PD_PID=
	if [ "$rc" = 0 ]; then ok "SIGTERM: exit status 0 within 10 s"; else not_ok "SIGTERM: exit status 0 (got $rc)" "$(log_tail)"; fi
	if wait_for 10 'Received: .*([Ss]hutdown|Cease)' birdc_ show protocols all pathosd; then
		ok "SIGTERM: BIRD received the Cease (administrative shutdown)"
	else
		not_ok "SIGTERM: BIRD received the Cease" "$(cat "$TMP/last.out")"
	fi
else
	not_ok "SIGTERM: pathosd exits within 10 s" "$(log_tail)"
fi

[ "$failures" = 0 ]
