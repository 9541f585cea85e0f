#!/usr/bin/env bash
# What a router owner does in LuCI's pathosd pages, in the real LuCI client
# (Debian's Chromium, headless, driven by playwright-core) against LuCI's real
# server side (./build.sh: uhttpd, ucode, rpcd with its ucode plugin host,
# luci-base) on OpenWrt's real procd, ubusd, uci and opkg (../build.sh,
# ./boot.sh), with pathosd peering with Debian's BIRD:
#
#   scripts/openwrt-real/luci/flows.sh --out OUT --src SRC --work DIR
#       [--checkout DIR] [--pkgs DIR] [--only REGEX]
#
# OUT and SRC are ../build.sh's and ./build.sh's (both must have run). DIR
# (made if missing) gets the root (DIR/root, remade at each run), BIRD's
# files, the browser profiles (a fresh one per flow), playwright-core
# (`npm ci` of package.json and package-lock.json here, in DIR/npm) and,
# without --pkgs, the packages. --checkout is the pathosd tree under test
# (default: this one): its luci-app/ and files/ go into the packages, and its
# binary is built with its scripts/cross-build.sh (x86_64 static musl;
# PATHOSD_CROSS_LOCK names a file to hold with flock(1) meanwhile, for
# machines where several builds share the CPU). --pkgs DIR takes the
# packages from DIR instead (pathosd_*_x86_64.ipk and
# luci-app-pathosd_*_all.ipk, as scripts/build-packages.sh names them).
# --only runs the flows whose name matches REGEX.
#
# Prints one line per flow, `PASS name …` or `FAIL name: why`, then
# "N passed, N failed"; the status is 1 if any flow failed, 2 if the set-up
# failed. Times measured are printed on the flow's line and collected in
# DIR/times.txt; a failed flow leaves DIR/shots/NAME.png (the browser's
# view) and DIR/shots/NAME.logread (the root's log then). The flows are in
# flows.cjs (each says what it asserts). One run: about 12 minutes on 2
# busy cores, plus the cross build without --pkgs.
#
# Addresses (the root shares the host's network namespace): BIRD passive on
# 127.89.0.1:179; pathosd dials from 127.89.0.2 (AS 65001, API on
# 127.89.0.2:59189); uhttpd (LuCI) on 127.89.0.3:8080; the health-check
# backend (an HTTP server answering /healthz) on 127.89.0.4:8081. Everything
# this script starts (BIRD, the backend, the root's PID 1) is ended by PID.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
LBOOT="$HERE/boot.sh"

usage() { sed -n '8,9p' "$0" >&2; exit 2; }
OUT='' SRC='' WORK='' CHECKOUT=$REPO PKGS='' ONLY=''
while [ "$#" -gt 0 ]; do
	case "$1" in
		--out) OUT=$2; shift 2 ;;
		--src) SRC=$2; shift 2 ;;
		--work) WORK=$2; shift 2 ;;
		--checkout) CHECKOUT=$2; shift 2 ;;
		--pkgs) PKGS=$2; shift 2 ;;
		--only) ONLY=$2; shift 2 ;;
		*) usage ;;
	esac
done
die() { echo "openwrt-real/luci/flows: $*" >&2; exit 2; }
if [ -z "$OUT" ] || [ -z "$SRC" ] || [ -z "$WORK" ]; then usage; fi
OUT=$(cd "$OUT" && pwd) || die "no OUT $OUT"
SRC=$(cd "$SRC" && pwd) || die "no SRC $SRC"
CHECKOUT=$(cd "$CHECKOUT" && pwd) || die "no checkout $CHECKOUT"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

# shellcheck source=scripts/apt.sh
. "$REPO/scripts/apt.sh"
# shellcheck source=scripts/openwrt-real/bird.sh
. "$HERE/../bird.sh"
apt_ensure bird2 python3 util-linux chromium curl
# node and npm: Debian's (npm is a package of its own there) unless a node is
# installed already (NodeSource's carries npm).
if ! command -v node >/dev/null; then apt_ensure nodejs npm; fi
for tool in bird birdc nsenter unshare python3 node npm /usr/bin/chromium; do
	command -v "$tool" >/dev/null || die "no $tool"
done

BIRD_IP=127.89.0.1
PD_IP=127.89.0.2
LISTEN=127.89.0.3:8080
BACKEND=127.89.0.4:8081
ROOT="$WORK/root"
BIRD_DIR="$WORK/bird"
BIRD_SOCK="$BIRD_DIR/bird.ctl"
STARTED=()

cleanup() {
	local p
	if bash "$LBOOT" pid "$ROOT" >/dev/null 2>&1; then bash "$LBOOT" stop "$ROOT" >/dev/null 2>&1; fi
	for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${STARTED[@]}"; do
		for _ in $(seq 1 50); do [ -d "/proc/$p" ] || break; sleep 0.1; done
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- playwright-core -----------------------------------------------------------
NPM_DIR="$WORK/npm"
mkdir -p "$NPM_DIR"
if ! cmp -s "$HERE/package-lock.json" "$NPM_DIR/package-lock.json" ||
	[ ! -f "$NPM_DIR/node_modules/playwright-core/package.json" ]; then
	cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/"
	(cd "$NPM_DIR" && npm ci --no-audit --no-fund >"$WORK/npm.log" 2>&1) ||
		die "npm ci of playwright-core failed: $WORK/npm.log"
fi

# --- packages --------------------------------------------------------------------
if [ -z "$PKGS" ]; then
	PKGS="$WORK/pkgs"
	echo "# building the packages of $CHECKOUT (cross-build.sh x86_64, build-packages.sh)"
	cross=(env PATHOSD_SIZE_GATE=0 PATHOSD_CROSS_DIR="$WORK/cross" bash "$CHECKOUT/scripts/cross-build.sh"
		x86_64-unknown-linux-musl)
	if [ -n "${PATHOSD_CROSS_LOCK:-}" ]; then cross=(flock "$PATHOSD_CROSS_LOCK" "${cross[@]}"); fi
	bin="$WORK/cross/out/x86_64-unknown-linux-musl/default/pathosd"
	rm -f "$bin"
	# cross-build.sh also fails on its size and hot-text gates, which say
	# nothing of LuCI: a binary it built and ran under qemu is used, the
	# gate's verdict printed.
	if ! (cd "$CHECKOUT" && "${cross[@]}") >"$WORK/cross-build.log" 2>&1; then
		if ! grep -q 'runs under qemu' "$WORK/cross-build.log" || [ ! -x "$bin" ]; then
			die "cross-build failed: $WORK/cross-build.log"
		fi
		echo "# cross-build.sh failed a gate, the flows use its binary: $(grep -o 'FAIL: [^,]*' "$WORK/cross-build.log" | sort -u | tr '\n' ' ')"
	fi
	rm -rf "$PKGS"
	bash "$CHECKOUT/scripts/build-packages.sh" --bin "$bin" \
		--arch x86_64 --out "$PKGS" >"$WORK/build-packages.log" 2>&1 ||
		die "build-packages failed: $WORK/build-packages.log"
fi
IPK=$(compgen -G "$PKGS/pathosd_*_x86_64.ipk" | sort | head -n 1)
LIPK=$(compgen -G "$PKGS/luci-app-pathosd_*_all.ipk" | sort | head -n 1)
if [ -z "$IPK" ] || [ -z "$LIPK" ]; then
	die "no pathosd_*_x86_64.ipk and luci-app-pathosd_*_all.ipk in $PKGS"
fi

# --- BIRD ------------------------------------------------------------------------
rm -rf "$BIRD_DIR"
mkdir -p "$BIRD_DIR"
cat >"$BIRD_DIR/bird.conf" <<EOF
router id $BIRD_IP;
log "$BIRD_DIR/bird.log" { info, warning, error, fatal };
protocol device {}
protocol bgp pathosd {
	local $BIRD_IP as 65000;
	neighbor $PD_IP as 65001;
	passive on;
	strict bind on;
	multihop;
	ipv4 {
		import filter {
			if net ~ [ 10.89.0.0/16{32,32}, 127.89.0.0/16{32,32} ] then { bgp_next_hop = net.ip; accept; }
			reject;
		};
		export none;
	};
}
EOF
start_bird

# --- the health-check backend ----------------------------------------------------
python3 - "${BACKEND%:*}" "${BACKEND#*:}" >"$WORK/backend.log" 2>&1 <<'EOF' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    def answer(self, body):
        code = 200 if self.path.split('?')[0] == '/healthz' else 404
        self.send_response(code)
        self.send_header('Content-Length', '3')
        self.end_headers()
        if body:
            self.wfile.write(b'ok\n')
    def do_GET(self): self.answer(True)
    def do_HEAD(self): self.answer(False)
    def log_message(self, *a): pass

ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 1024
ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
EOF
STARTED+=("$!")
for _ in $(seq 1 50); do
	python3 -c "import socket,sys; socket.create_connection(('${BACKEND%:*}', ${BACKEND#*:}), 1)" 2>/dev/null && break
	sleep 0.1
done

# --- the root --------------------------------------------------------------------
echo "# root: $ROOT (LuCI on http://$LISTEN/)"
bash "$LBOOT" root "$ROOT" "$OUT" "$SRC" "$LISTEN" >/dev/null || die "luci/boot.sh root failed"
mkdir -p "$ROOT/root/pkgs"
cp "$IPK" "$LIPK" "$ROOT/root/pkgs/"
bash "$LBOOT" start "$ROOT" >/dev/null || die "luci/boot.sh start failed"
X() { bash "$LBOOT" exec "$ROOT" "$1"; }
# root's password, as `passwd` would store it (uhttpd -m: MD5 crypt).
ROOT_PW=pathosd-luci
X "h=\$(uhttpd -m '$ROOT_PW') && sed -i \"s|^root:[^:]*:|root:\$h:|\" /etc/shadow" || die "cannot set root's password"
X "opkg install /root/pkgs/$(basename "$IPK") /root/pkgs/$(basename "$LIPK")" >"$WORK/opkg.log" 2>&1 ||
	die "opkg install failed: $WORK/opkg.log"
SHIPPED="$WORK/shipped.conf"
cp "$ROOT/etc/config/pathosd" "$SHIPPED"
# Read-only logins, made with docs/openwrt.md's commands: the app's role
# alone, then with LuCI's own read roles.
NOC_PW=noc-password
mklogin() {
	local user=$1 r cmd
	shift
	cmd="uci add rpcd login >/dev/null && uci set rpcd.@login[-1].username='$user' &&
		uci set rpcd.@login[-1].password=\"\$(uhttpd -m '$NOC_PW')\""
	for r in "$@"; do cmd="$cmd && uci add_list rpcd.@login[-1].read='$r'"; done
	X "$cmd && uci commit rpcd" || die "cannot add the login $user"
}
mklogin noc1 luci-app-pathosd
mklogin noc2 unauthenticated luci-base luci-app-pathosd
mklogin noc3 unauthenticated luci-base luci-mod-status-index luci-app-pathosd
curl -sf -o /dev/null -m 30 "http://$LISTEN/cgi-bin/luci/" ||
	[ "$(curl -s -o /dev/null -w '%{http_code}' -m 30 "http://$LISTEN/cgi-bin/luci/")" = 403 ] ||
	die "LuCI does not answer on http://$LISTEN/cgi-bin/luci/"

# --- the flows -------------------------------------------------------------------
: >"$WORK/times.txt"
LUCI_URL="http://$LISTEN" ROOT="$ROOT" BOOT="$LBOOT" BIRD_SOCK="$BIRD_SOCK" WORK="$WORK" \
	ROOT_PW="$ROOT_PW" NOC_PW="$NOC_PW" ONLY="$ONLY" PD_IP="$PD_IP" BIRD_IP="$BIRD_IP" BACKEND="$BACKEND" \
	SHIPPED="$SHIPPED" PLAYWRIGHT="$NPM_DIR/node_modules/playwright-core" CHROMIUM=/usr/bin/chromium \
	node "$HERE/flows.cjs"
