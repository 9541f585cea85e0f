#!/usr/bin/env bash
# What a router owner does with pathosd's package, init script and ubus
# object, run on OpenWrt's real procd (PID 1), ubusd, uci, validate_data,
# logd, jsonfilter, opkg and apk (build.sh, boot.sh), against Debian's BIRD:
#
#   scripts/openwrt-real/flows.sh --out OUT --src SRC --work DIR [--pkgs DIR] [--only REGEX]
#
# OUT and SRC are build.sh's. DIR (made if missing) gets the two roots
# (DIR/root-opkg, DIR/root-apk, remade at each run), BIRD's files and, without
# --pkgs, the packages: scripts/cross-build.sh x86_64-unknown-linux-musl,
# then scripts/build-packages.sh with release 1 and 2. --pkgs DIR takes them
# from DIR instead (pathosd_*-r1_x86_64.ipk, pathosd_*-r2_x86_64.ipk,
# x86_64/pathosd-*-r1.apk, x86_64/pathosd-*-r2.apk, as build-packages.sh
# names them). --only runs the flows whose name matches REGEX (their
# preconditions are set up by each flow). With PATHOSD_CROSS_LOCK set to a
# file, the cross build runs under `flock` on it.
#
# Prints one line per flow, `PASS name` or `FAIL name: why`, then
# "N passed, N failed"; the status is 1 if any failed. The flows:
#   t01…t24  the table "What a user sees" of docs/testing.md (opkg root);
#   d1-…     an empty or comments-only /etc/config/pathosd, `uci delete
#            pathosd.main`, main renamed, main anonymous, each with reload,
#            reload_config, start and restart: refused, daemon kept;
#   d2       a refused reload, the file fixed back, reload: last_reload applied;
#   d3       a reload moving api_listen to a port in use: not reported applied;
#   d4       withdrawal events of every VIP reach `ubus listen pathosd.vip`
#            at SIGTERM right after a burst of 12 `check` calls (8 runs);
#   d17      `restart` of a daemon announcing 10,000 VIPs: exit 0, a new
#            daemon, every VIP back in BIRD;
#   d9-…     `logread -e pathosd` finds the daemon's own lines with 3-, 4-,
#            5- and 7-digit PIDs (the namespace's ns_last_pid set before the
#            start; for 7 digits kernel.pid_max is raised for the flow and
#            put back);
#   w1       procd's watchdog: pathosd stopped (SIGSTOP) is killed and
#            respawned by procd within the watchdog time plus term_timeout,
#            and every VIP comes back in BIRD (both times printed);
#   w2       with api.ubus_socket off the daemon still pings procd: the same
#            daemon runs past the watchdog time;
#   u1       `stop` then `start` at once (opkg's prerm and postinst) with
#            shutdown_drain '2s': the old daemon drains, no second daemon
#            runs beside it, procd starts the new one when the old exits
#            (within term_timeout + 1 s of the stop), every VIP back;
#            the start exits 0 and prints nothing with "rejected";
#   u2       `start` of a running daemon (apk's post-upgrade): the same PID,
#            no route withdrawn;
#   u3       `stop` of a daemon that cannot act on SIGTERM (SIGSTOPped):
#            procd SIGKILLs it term_timeout (5 s) after the stop, and
#            nothing of it is left;
#   a1…a7    the .apk with the real apk-tools (apk root): database, an
#            unsigned package refused, install, start, upgrade keeping the
#            modified config, audit, removal.
#
# BIRD (bird2) runs on the host with a socket and log in DIR/bird, passive on
# 127.88.0.1:179; pathosd dials from 127.88.0.2 (AS 65001) and announces
# 10.88.0.53, .80 and .81 (`always`). "Kept" is the same daemon PID and
# every VIP in `birdc show route`. Everything this script starts (BIRD, a
# listener, the roots' PID 1) is ended by its PID.

# `A && pass … || fail …` is an if-then-else here: pass never fails.
# shellcheck disable=SC2015
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BOOT="$HERE/boot.sh"

OUT='' SRC='' WORK='' PKGS='' ONLY=''
while [ "$#" -gt 0 ]; do
	case "$1" in
		--out) OUT=$2; shift 2 ;;
		--src) SRC=$2; shift 2 ;;
		--work) WORK=$2; shift 2 ;;
		--pkgs) PKGS=$2; shift 2 ;;
		--only) ONLY=$2; shift 2 ;;
		*) sed -n '7p' "$0" >&2; exit 2 ;;
	esac
done
die() { echo "openwrt-real/flows: $*" >&2; exit 2; }
if [ -z "$OUT" ] || [ -z "$SRC" ] || [ -z "$WORK" ]; then sed -n '7p' "$0" >&2; exit 2; fi
OUT=$(cd "$OUT" && pwd) || die "no OUT $OUT"
SRC=$(cd "$SRC" && pwd) || die "no SRC $SRC"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

# shellcheck source=scripts/apt.sh
. "$REPO/scripts/apt.sh"
# shellcheck source=scripts/openwrt-real/bird.sh
. "$HERE/bird.sh"
apt_ensure bird2 python3 util-linux
for tool in bird birdc nsenter unshare python3; do
	command -v "$tool" >/dev/null || die "no $tool"
done

BIRD_IP=127.88.0.1
PD_IP=127.88.0.2
API_PORT=59180
BUSY_PORT=59181
BIRD_DIR="$WORK/bird"
BIRD_SOCK="$BIRD_DIR/bird.ctl"
ROOT_OPKG="$WORK/root-opkg"
ROOT_APK="$WORK/root-apk"
ROOT=''
STARTED=()
PID_MAX_WAS=''

cleanup() {
	local p
	for r in "$ROOT_OPKG" "$ROOT_APK"; do
		bash "$BOOT" pid "$r" >/dev/null 2>&1 && bash "$BOOT" stop "$r" >/dev/null 2>&1
	done
	for p in "${STARTED[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${STARTED[@]}"; do
		for _ in $(seq 1 50); do [ -d "/proc/$p" ] || break; sleep 0.1; done
	done
	if [ -n "$PID_MAX_WAS" ]; then echo "$PID_MAX_WAS" >/proc/sys/kernel/pid_max; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- packages ------------------------------------------------------------------

if [ -z "$PKGS" ]; then
	PKGS="$WORK/pkgs"
	echo "# building the packages (scripts/cross-build.sh x86_64, scripts/build-packages.sh r1 and r2)"
	# PATHOSD_CROSS_LOCK names a lock file that cross builds sharing the
	# machine hold while they run (flock), so that two do not compete for
	# the same cores.
	lock=()
	if [ -n "${PATHOSD_CROSS_LOCK:-}" ]; then lock=(flock "$PATHOSD_CROSS_LOCK"); fi
	PATHOSD_SIZE_GATE=0 PATHOSD_CROSS_DIR="$WORK/cross" "${lock[@]}" bash "$REPO/scripts/cross-build.sh" \
		x86_64-unknown-linux-musl >"$WORK/cross-build.log" 2>&1 ||
		die "cross-build failed: $WORK/cross-build.log"
	bin="$WORK/cross/out/x86_64-unknown-linux-musl/default/pathosd"
	rm -rf "$PKGS"
	for rel in 1 2; do
		bash "$REPO/scripts/build-packages.sh" --bin "$bin" --arch x86_64 --out "$PKGS" \
			--release "$rel" >>"$WORK/build-packages.log" 2>&1 ||
			die "build-packages failed: $WORK/build-packages.log"
	done
fi
pick() {
	local f
	f=$(compgen -G "$1" | head -n 1)
	[ -n "$f" ] || die "no package $1"
	echo "$f"
}
IPK1=$(pick "$PKGS/pathosd_*-r1_x86_64.ipk")
IPK2=$(pick "$PKGS/pathosd_*-r2_x86_64.ipk")
APK1=$(pick "$PKGS/x86_64/pathosd-*-r1.apk")
APK2=$(pick "$PKGS/x86_64/pathosd-*-r2.apk")
SHIPPED="$REPO/files/pathosd.config"

# --- BIRD ------------------------------------------------------------------------

rm -rf "$BIRD_DIR"
mkdir -p "$BIRD_DIR"
cat >"$BIRD_DIR/bird.conf" <<EOF
router id $BIRD_IP;
log "$BIRD_DIR/bird.log" all;
protocol device {}
protocol bgp pathosd {
	local $BIRD_IP as 65000;
	neighbor $PD_IP as 65001;
	passive on;
	# Listen on 127.88.0.1:179 only, not on every address (other tests'
	# speakers may hold port 179 on their own addresses).
	strict bind on;
	multihop;
	# The router recipe's (docs/openwrt.md, examples/openwrt-bird.conf):
	# without it BIRD delays every session after a hold timer expired (w1's
	# stall) by up to its default 60 s, and later flows wait on that.
	error wait time 0, 0;
	ipv4 {
		import filter {
			if net ~ [ 10.88.0.0/16{32,32} ] then { bgp_next_hop = net.ip; accept; }
			reject;
		};
		export none;
	};
}
EOF
start_bird

# --- helpers ---------------------------------------------------------------------

PASSED=0 FAILED=0
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() {
	local name=$1
	shift
	echo "FAIL $name: $*" | tr '\n' ' ' | sed 's/ *$//'
	echo
	FAILED=$((FAILED + 1))
}
want() { [ -z "$ONLY" ] || [[ $1 =~ $ONLY ]]; }
# want_any NAME...: any of the flows is asked for.
want_any() {
	local f
	for f in "$@"; do want "$f" && return 0; done
	return 1
}

# X CMD: runs CMD inside the root; O its output (stdout and stderr), RC its status.
O='' RC=0
X() {
	O=$(bash "$BOOT" exec "$ROOT" "$1" 2>&1)
	RC=$?
}
# Q CMD: CMD's standard output only.
Q() { bash "$BOOT" exec "$ROOT" "$1" 2>/dev/null; }
# wait_for SECONDS CMD...: until CMD succeeds (every 0.1 s), at most SECONDS.
wait_for() {
	local n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}
one_line() { printf '%s' "$1" | tr '\n' '|' | cut -c 1-400; }

# The daemon procd runs (its PID in the namespace), or nothing.
daemon_pid() {
	Q 'ubus -t 5 call service list "{\"name\":\"pathosd\"}" | jsonfilter -e "@.pathosd.instances.instance1.pid"'
}
# Whether PID (in the namespace) is alive.
alive() { bash "$BOOT" exec "$ROOT" "[ -d /proc/$1 ]" 2>/dev/null; }
no_daemon() { [ -z "$(daemon_pid)" ]; }
# Whether procd knows the service (with or without an instance).
service_known() { Q 'ubus -t 5 call service list "{\"name\":\"pathosd\"}"' | grep -q '"pathosd"'; }

routes() { birdc -s "$BIRD_SOCK" show route protocol pathosd 2>/dev/null | awk '/^10\.88\.0\.[0-9]+\/32/ { print $1 }' | sort | tr '\n' ' '; }
ALL_ROUTES="10.88.0.53/32 10.88.0.80/32 10.88.0.81/32 "
routes_are() { [ "$(routes)" = "$1" ]; }
has_route() { routes | grep -q "$1 "; }
no_routes() { [ -z "$(routes)" ]; }
established() { birdc -s "$BIRD_SOCK" show protocols pathosd 2>/dev/null | grep -q Established; }

# kept PID: the same daemon and every VIP in BIRD; prints why not.
kept() {
	local now
	now=$(daemon_pid)
	if [ "$now" != "$1" ]; then
		echo "daemon PID was $1, now '${now:-none}'"
		return 1
	fi
	if ! routes_are "$ALL_ROUTES"; then
		echo "BIRD has '$(routes)', not '$ALL_ROUTES'"
		return 1
	fi
}

status_get() { Q "ubus -t 5 call pathosd status | jsonfilter -e '$1'"; }
reload_stamp() { status_get '@.last_reload.time'; }
result_is() { [ "$(status_get '@.last_reload.result')" = "$1" ]; }
stamp_moved() { [ "$(reload_stamp)" != "$1" ]; }

# reload_config's checksums of the files as they are now, taken without
# sending events (as its first run at boot does), so that a flow's
# reload_config sees exactly the flow's change.
baseline() { Q 'rm -f /var/run/config.md5 && /sbin/reload_config' >/dev/null; }

# Log lines since mark NAME.
mark() { Q "logger -t flowmark 'FLOW $1'" >/dev/null; }
log_since() { Q /sbin/logread | sed -n "/flowmark: FLOW $1\$/,\$p"; }
log_has() { log_since "$1" | grep -qF -- "$2"; }

CONF="" # the root's /etc/config/pathosd, from the host
# The configuration of t06 on, byte for byte as uci wrote it (procd hashes
# the file): three `always` VIPs.
GOOD="$WORK/good.conf"
conf_good() { cp "$GOOD" "$CONF"; }
is_good() { cmp -s "$CONF" "$GOOD"; }
# conf_sed EXPR: the good file edited.
conf_sed() { sed "$1" "$GOOD" >"$CONF"; }

# The daemon running on GOOD with every VIP in BIRD (started if needed).
ensure_running() {
	local p
	is_good || conf_good
	p=$(daemon_pid)
	if [ -z "$p" ]; then
		X '/etc/init.d/pathosd start'
	fi
	wait_for 30 routes_are "$ALL_ROUTES" && [ -n "$(daemon_pid)" ]
}

# The daemon stopped (by the init script), nothing in BIRD.
ensure_stopped() {
	[ -z "$(daemon_pid)" ] || X '/etc/init.d/pathosd stop'
	wait_for 15 no_daemon && wait_for 15 no_routes
}

GOOD_CONF() {
	cat <<EOF
config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '10.88.0.2'
	option local_address '$PD_IP'
	option listen_port '-1'
	option hold_time '9s'
	option api_listen '$PD_IP:$API_PORT'
	option log_level 'info'

config neighbor 'bird'
	option address '$BIRD_IP'
	option peer_asn '65000'

config vip 'dns'
	option prefix '10.88.0.53/32'
	option always '1'

config vip 'web'
	option prefix '10.88.0.80/32'
	option always '1'

config vip 'web2'
	option prefix '10.88.0.81/32'
	option always '1'

EOF
}

new_root() {
	ROOT=$1
	CONF="$ROOT/etc/config/pathosd"
	bash "$BOOT" root "$ROOT" "$OUT" "$SRC" >/dev/null || die "boot.sh root $ROOT failed"
	mkdir -p "$ROOT/root/pkgs"
	cp "$IPK1" "$IPK2" "$APK1" "$APK2" "$ROOT/root/pkgs/"
	bash "$BOOT" start "$ROOT" >/dev/null || die "boot.sh start $ROOT failed"
}

# ==================================================================================
# The opkg root: the table of docs/testing.md.
# ==================================================================================

echo "# opkg root: $ROOT_OPKG"
new_root "$ROOT_OPKG"
IPK1_IN="/root/pkgs/$(basename "$IPK1")"
IPK2_IN="/root/pkgs/$(basename "$IPK2")"
GOOD_CONF >"$GOOD"

t01() {
	X "opkg install $IPK1_IN"
	if [ "$RC" != 0 ]; then fail t01 "opkg install: exit $RC: $(one_line "$O")"; return; fi
	local why=''
	[ -n "$(daemon_pid)" ] && why="$why started;"
	[ -L "$ROOT/etc/rc.d/S80pathosd" ] && [ -L "$ROOT/etc/rc.d/K05pathosd" ] || why="$why no boot links S80/K05;"
	cmp -s "$CONF" "$SHIPPED" || why="$why /etc/config/pathosd is not the shipped one;"
	[ -z "$why" ] && pass "t01 opkg install: exit 0, not started, S80/K05" || fail t01 "$why"
}

t02() {
	X "uci set pathosd.main.enabled=1 && uci set pathosd.main.router_id=10.88.0.2 &&
		uci set pathosd.main.local_address=$PD_IP && uci set pathosd.main.api_listen=$PD_IP:$API_PORT &&
		uci set pathosd.bird=neighbor && uci set pathosd.bird.address=$BIRD_IP &&
		uci set pathosd.bird.peer_asn=65000 && uci set pathosd.dns=vip &&
		uci set pathosd.dns.prefix=10.88.0.53/32 && uci set pathosd.dns.always=1 &&
		uci commit pathosd"
	if [ "$RC" != 0 ]; then fail t02 "uci: exit $RC: $(one_line "$O")"; return; fi
	# A commit triggers nothing: give procd a trigger's delay to prove it.
	sleep 1.5
	[ -z "$(daemon_pid)" ] && pass "t02 uci commit: exit 0, nothing happens" || fail t02 "the daemon started"
}

t03() {
	X 'reload_config'
	sleep 1.5
	if [ "$RC" = 0 ] && [ -z "$(daemon_pid)" ]; then
		pass "t03 first reload_config after installing: exit 0, nothing happens"
	else
		fail t03 "exit $RC, daemon '$(daemon_pid)'"
	fi
}

t04() {
	X '/etc/init.d/pathosd start'
	if [ "$RC" != 0 ]; then fail t04 "exit $RC: $(one_line "$O")"; return; fi
	if wait_for 30 has_route 10.88.0.53/32 && established; then
		pass "t04 start: exit 0, session Established, VIP in BIRD"
	else
		fail t04 "daemon '$(daemon_pid)', BIRD routes '$(routes)'"
	fi
}

t05() {
	local p
	p=$(daemon_pid)
	mark t05
	X "uci set pathosd.web=vip && uci set pathosd.web.prefix=10.88.0.80/32 &&
		uci set pathosd.web.always=1 && uci commit pathosd && /etc/init.d/pathosd reload"
	if [ "$RC" != 0 ]; then fail t05 "exit $RC: $(one_line "$O")"; return; fi
	if ! wait_for 15 has_route 10.88.0.80/32; then fail t05 "web not in BIRD: '$(routes)'"; return; fi
	local why=''
	[ "$(daemon_pid)" = "$p" ] || why="$why PID $p -> $(daemon_pid);"
	wait_for 5 log_has t05 'reload: VIPs added: web' || why="$why no 'reload: VIPs added: web' in the log;"
	log_has t05 'reload: applied' || why="$why no 'reload: applied';"
	Q "wget -q -O - http://$PD_IP:$API_PORT/status" | grep -q '"web"' || why="$why /status does not list web;"
	[ -z "$why" ] && pass "t05 VIP added, reload: exit 0, kept, applied, in BIRD and /status" || fail t05 "$why"
}

t06() {
	local p
	p=$(daemon_pid)
	X "uci set pathosd.web2=vip && uci set pathosd.web2.prefix=10.88.0.81/32 &&
		uci set pathosd.web2.always=1 && uci commit pathosd && reload_config"
	if [ "$RC" != 0 ]; then fail t06 "exit $RC: $(one_line "$O")"; return; fi
	if wait_for 15 has_route 10.88.0.81/32 && [ "$(daemon_pid)" = "$p" ]; then
		pass "t06 VIP added, reload_config: exit 0, kept, applied by procd's trigger"
	else
		fail t06 "BIRD '$(routes)', PID $p -> $(daemon_pid)"
	fi
	# From here on GOOD is the file uci wrote (what the daemon runs).
	cp "$CONF" "$GOOD"
}

t07() {
	X 'uci set pathosd.main.hold_time=soon'
	local exp file piped
	exp=$(Q 'uci export pathosd')
	X 'pathosd validate --config /etc/config/pathosd'
	file=$RC
	X 'uci export pathosd | pathosd validate --config -'
	piped=$RC
	local out=$O
	Q 'uci revert pathosd' >/dev/null
	if printf '%s' "$exp" | grep -q "hold_time 'soon'" && grep -q "hold_time '9s'" "$CONF" &&
		[ "$file" = 0 ] && [ "$piped" = 1 ] && printf '%s' "$out" | grep -q 'hold_time' &&
		printf '%s' "$out" | grep -q '"soon"'; then
		pass "t07 staged hold_time=soon: the file validates, the export does not (exit 1, names hold_time)"
	else
		fail t07 "export shows soon: $(printf '%s' "$exp" | grep -c soon), validate file exit $file, export exit $piped: $(one_line "$out")"
	fi
}

# bad_reload NAME DESCRIPTION WRITER COMMAND EXPECTED-RC TEXTS...: the
# daemon kept after COMMAND on the file WRITER writes, exit EXPECTED-RC,
# every TEXT in the output (or, for reload_config, in the log). NOSIG=1: the
# daemon must not have been signalled (last_reload unchanged); REJECTED=1: it
# must have been, and have rejected the file.
bad_reload() {
	local name=$1 desc=$2 writer=$3 cmd=$4 rc=$5
	shift 5
	ensure_running || { fail "$name" "precondition: daemon not running on the good file"; return; }
	local p why='' t stamp
	p=$(daemon_pid)
	stamp=$(reload_stamp)
	[ "$cmd" != reload_config ] || baseline
	mark "$name"
	"$writer"
	X "$cmd"
	[ "$RC" = "$rc" ] || why="$why exit $RC (want $rc);"
	for t in "$@"; do
		if [ "$cmd" = reload_config ]; then
			wait_for 10 log_has "$name" "$t" || why="$why no '$t' in the log;"
		else
			printf '%s' "$O" | grep -qF -- "$t" || why="$why no '$t' in the output;"
		fi
	done
	if [ "${REJECTED:-0}" = 1 ]; then
		wait_for 5 result_is rejected || why="$why last_reload '$(status_get '@.last_reload.result')', want rejected;"
	fi
	if [ "${NOSIG:-0}" = 1 ] && stamp_moved "$stamp"; then why="$why signalled (last_reload changed);"; fi
	why="$why $(kept "$p")"
	conf_good
	[ -z "${why// /}" ] && pass "$name $desc" || fail "$name" "$why output: $(one_line "$O")"
}

write_syntax_error() { conf_good; printf '\toption bad '"'"'unterminated\n' >>"$CONF"; }
write_maybe() { conf_sed "s/option enabled '1'/option enabled 'maybe'/"; }
write_bad_prefix() { conf_sed "s|10.88.0.53/32|10.88.0.999/32|"; }

t08() {
	bad_reload t08 "syntax error, reload: exit 1, kept, the line named, refused" write_syntax_error \
		'/etc/init.d/pathosd reload' 1 "unterminated" \
		"reload refused: invalid configuration; the running daemon keeps its previous one"
}
t09() {
	bad_reload t09 "syntax error, reload_config: exit 0, kept, refused in the log" write_syntax_error \
		reload_config 0 "unterminated" "reload refused: invalid configuration"
}
t10() {
	NOSIG=1 bad_reload t10 "enabled 'maybe', reload: exit 1, kept, not signalled" write_maybe \
		'/etc/init.d/pathosd reload' 1 "validates as bool with false" \
		"section 'main' does not validate (option enabled must be 0 or 1)" "reload refused:"
}
t11() {
	bad_reload t11 "enabled 'maybe', reload_config: exit 0, kept, refused in the log" write_maybe \
		reload_config 0 "section 'main' does not validate" "reload refused:"
}
t12() {
	REJECTED=1 bad_reload t12 "invalid prefix, reload: exit 1, kept, last_reload rejected" write_bad_prefix \
		'/etc/init.d/pathosd reload' 1 "reload refused:"
}

t13() {
	ensure_running || { fail t13 "precondition: not running"; return; }
	conf_sed "s/option enabled '1'/option enabled '0'/"
	X '/etc/init.d/pathosd reload'
	local why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	printf '%s' "$O" | grep -qF 'pathosd.main.enabled is off; stopping the daemon' || why="$why no 'enabled is off' notice;"
	wait_for 15 no_daemon || why="$why daemon still runs;"
	wait_for 15 no_routes || why="$why BIRD still has '$(routes)';"
	[ -z "$why" ] && pass "t13 enabled '0', reload: exit 0, stopped, notice" || fail t13 "$why $(one_line "$O")"
}

# bad_start NAME DESC WRITER TEXTS...: start with the daemon stopped: exit 1,
# not started, the service known to procd without an instance.
bad_start() {
	local name=$1 desc=$2 writer=$3 t why=''
	shift 3
	ensure_stopped || { fail "$name" "precondition: could not stop"; return; }
	"$writer"
	X '/etc/init.d/pathosd start'
	[ "$RC" = 1 ] || why="$why exit $RC;"
	for t in "$@"; do printf '%s' "$O" | grep -qF -- "$t" || why="$why no '$t';"; done
	[ -z "$(daemon_pid)" ] || why="$why started;"
	service_known || why="$why procd does not know the service;"
	[ -z "$why" ] && pass "$name $desc" || fail "$name" "$why $(one_line "$O")"
}
t14() {
	bad_start t14 "start, invalid value, stopped: exit 1, not started, service without instance" write_bad_prefix \
		"start refused: invalid configuration; pathosd is not running"
}
t15() {
	bad_start t15 "start, syntax error, stopped: exit 1, not started" write_syntax_error "start refused:"
}
t16() {
	# As after t15: stopped, the service registered by the refused start.
	ensure_stopped || { fail t16 "precondition: could not stop"; return; }
	write_syntax_error
	X '/etc/init.d/pathosd start'
	baseline
	conf_good
	X reload_config
	if [ "$RC" = 0 ] && wait_for 20 routes_are "$ALL_ROUTES" && [ -n "$(daemon_pid)" ]; then
		pass "t16 file fixed, reload_config: exit 0, started by the refused start's trigger"
	else
		fail t16 "exit $RC, daemon '$(daemon_pid)', BIRD '$(routes)'"
	fi
}
t17() {
	NOSIG=1 bad_reload t17 "start, enabled 'maybe', running: exit 1, kept, not signalled" write_maybe \
		'/etc/init.d/pathosd start' 1 "refused"
}
t18() {
	REJECTED=1 bad_reload t18 "start, invalid value, running: exit 1, kept, SIGHUP rejected" write_bad_prefix \
		'/etc/init.d/pathosd start' 1 "start refused:"
}
t19() {
	ensure_running || { fail t19 "precondition: not running"; return; }
	X '/etc/init.d/pathosd stop'
	local why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	wait_for 15 no_daemon || why="$why daemon runs;"
	wait_for 15 no_routes || why="$why BIRD has '$(routes)';"
	birdc -s "$BIRD_SOCK" show protocols all pathosd | grep -Eq 'Received: .*([Ss]hutdown|Cease)' || why="$why BIRD saw no Cease;"
	[ -z "$why" ] && pass "t19 stop: exit 0, withdrawn, Cease" || fail t19 "$why"
}
t20() {
	ensure_stopped
	conf_good
	X '/etc/init.d/pathosd restart'
	local why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	wait_for 30 routes_are "$ALL_ROUTES" || why="$why BIRD '$(routes)';"
	printf '%s' "$O" | grep -q 'Command failed: ubus call service delete' ||
		why="$why rc.common's 'Command failed: ubus call service delete' not printed;"
	[ -z "$why" ] && pass "t20 restart, stopped: exit 0, started" || fail t20 "$why $(one_line "$O")"
}
t21() {
	ensure_running || { fail t21 "precondition: not running"; return; }
	local p
	p=$(daemon_pid)
	X '/etc/init.d/pathosd restart'
	local why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	wait_for 30 routes_are "$ALL_ROUTES" || why="$why BIRD '$(routes)';"
	local n
	n=$(daemon_pid)
	[ -n "$n" ] && [ "$n" != "$p" ] || why="$why PID $p -> '$n' (want a new one);"
	[ -z "$why" ] && pass "t21 restart, running: exit 0, new PID, VIPs back" || fail t21 "$why $(one_line "$O")"
}
t22() {
	bad_reload t22 "restart, invalid value, running: exit 1, kept, nothing stopped" write_bad_prefix \
		'/etc/init.d/pathosd restart' 1 "restart refused:"
}

# --- d flows: what must hold where defects were found ----------------------------

# d1 NAME FILE-TEXT-OR-UCI: the file does not have a usable 'main'.
d1_variant() {
	local variant=$1 action=$2 name="d1-$1-$2" p why='' cmd
	ensure_running || { fail "$name" "precondition: daemon not running on the good file"; return; }
	p=$(daemon_pid)
	[ "$action" != reload_config ] || baseline
	mark "$name"
	case "$variant" in
		empty) : >"$CONF" ;;
		comments) printf '# pathosd\n# config pathosd '"'"'main'"'"'\n#\toption enabled '"'"'1'"'"'\n' >"$CONF" ;;
		deleted) Q 'uci delete pathosd.main && uci commit pathosd' >/dev/null ;;
		renamed) Q 'uci rename pathosd.main=core && uci commit pathosd' >/dev/null ;;
		anonymous) conf_sed "s/^config pathosd 'main'\$/config pathosd/" ;;
	esac
	case "$action" in
		reload_config) cmd=reload_config ;;
		*) cmd="/etc/init.d/pathosd $action" ;;
	esac
	X "$cmd"
	if [ "$action" = reload_config ]; then
		[ "$RC" = 0 ] || why="$why exit $RC;"
		# procd's trigger runs the reload a second later.
		wait_for 10 log_has "$name" "refused" || why="$why no refusal in the log;"
		log_has "$name" "enabled is off" && why="$why logged 'enabled is off';"
	else
		[ "$RC" = 1 ] || why="$why exit $RC (want 1);"
		printf '%s' "$O" | grep -q 'refused' || why="$why no refusal printed;"
		printf '%s' "$O" | grep -q 'enabled is off' && why="$why printed 'enabled is off';"
	fi
	why="$why $(kept "$p")"
	conf_good
	if [ -z "${why// /}" ]; then
		pass "$name refused: exit as asked, daemon and routes kept"
	else
		fail "$name" "$why output: $(one_line "$O")"
	fi
}

d2() {
	ensure_running || { fail d2 "precondition: not running"; return; }
	write_bad_prefix
	X '/etc/init.d/pathosd reload'
	if [ "$RC" != 1 ]; then conf_good; fail d2 "precondition: the bad reload exited $RC"; return; fi
	wait_for 5 result_is rejected
	conf_good
	X '/etc/init.d/pathosd reload'
	local rc=$RC r
	wait_for 5 result_is applied
	r=$(status_get '@.last_reload.result')
	if [ "$rc" = 0 ] && [ "$r" = applied ]; then
		pass "d2 refused reload, file fixed back, reload: last_reload applied"
	else
		fail d2 "exit $rc, last_reload '$r' (errors: $(status_get '@.last_reload.errors[*]'))"
	fi
}

d3() {
	ensure_running || { fail d3 "precondition: not running"; return; }
	python3 -c "
import socket, time
s = socket.socket()
s.bind(('$PD_IP', $BUSY_PORT))
s.listen(1)
time.sleep(600)
" &
	local lp=$! before r why=''
	STARTED+=("$lp")
	wait_for 5 sh -c "ss -ltn | grep -q '$PD_IP:$BUSY_PORT '" || { fail d3 "precondition: no listener on $BUSY_PORT"; return; }
	before=$(reload_stamp)
	conf_sed "s/$PD_IP:$API_PORT/$PD_IP:$BUSY_PORT/"
	X '/etc/init.d/pathosd reload'
	local rc=$RC out=$O
	wait_for 5 stamp_moved "$before"
	r=$(status_get '@.last_reload.result')
	if [ "$rc" = 0 ] && ! printf '%s' "$out" | grep -qi 'not applied'; then
		why="$why exit 0 and nothing says 'not applied';"
	fi
	[ "$r" = applied ] && why="$why last_reload 'applied';"
	kill "$lp"
	conf_good
	X '/etc/init.d/pathosd reload'
	[ -z "$why" ] && pass "d3 api_listen to a port in use: reload reported not applied" ||
		fail d3 "$why output: $(one_line "$out")"
}

SLOW_VIP="
config vip 'slow'
	option prefix '10.88.0.90/32'

config check 'slow_exec'
	option vip 'slow'
	option type 'exec'
	option command '/bin/sh'
	list arg '-c'
	list arg 'sleep 2; exit 0'
	option interval '60s'
	option timeout '5s'
	option rise '1'
	option fall '1'
"
# events_withdrawn VIP: the listener got VIP's withdrawal.
events_withdrawn() {
	Q 'cat /tmp/d4.events' | grep -E "\"vip\": ?\"$1\"" | grep -Eq '"to": ?"withdrawn"'
}
gone() { ! alive "$1"; }
d4() {
	local runs=8 lost=() busy_total=0 timedout_total=0 r
	local slow="$WORK/slow.conf"
	{ cat "$GOOD"; printf '%s' "$SLOW_VIP"; } >"$slow"
	for r in $(seq 1 "$runs"); do
		cmp -s "$CONF" "$slow" || cp "$slow" "$CONF"
		if [ -z "$(daemon_pid)" ]; then X '/etc/init.d/pathosd start'; else X '/etc/init.d/pathosd reload'; fi
		if ! wait_for 30 routes_are "10.88.0.53/32 10.88.0.80/32 10.88.0.81/32 10.88.0.90/32 "; then
			lost+=("run $r: precondition: BIRD has '$(routes)'")
			continue
		fi
		local p
		p=$(daemon_pid)
		Q "rm -f /tmp/d4.*; ubus listen pathosd.vip >/tmp/d4.events 2>&1 & echo \$! >/tmp/d4.listen" >/dev/null
		# The listener is registered once it sees an event of its own.
		local n=0
		until Q 'grep -q d4probe /tmp/d4.events'; do
			Q "ubus send pathosd.vip '{\"d4probe\":$r}'" >/dev/null
			n=$((n + 1))
			[ "$n" -lt 50 ] || break
			sleep 0.1
		done
		# The timing the defect was seen with: the burst, SIGTERM half a second later.
		Q "for i in \$(seq 1 12); do
			( ubus -t 15 call pathosd check '{\"vip\":\"slow\"}' >/tmp/d4.check.\$i 2>&1; echo \$? >/tmp/d4.rc.\$i ) &
		done
		sleep 0.5
		/etc/init.d/pathosd stop
		wait" >/dev/null
		wait_for 15 gone "$p"
		local missing=() vip
		for vip in dns web web2 slow; do
			wait_for 3 events_withdrawn "$vip" || missing+=("$vip")
		done
		# ubus exits 256 - status: 247 is 9 (busy, refused), 249 is 7 (timed out).
		local rcs busy timedout
		rcs=$(Q 'cat /tmp/d4.rc.*')
		busy=$(printf '%s\n' "$rcs" | grep -c '^247$')
		timedout=$(printf '%s\n' "$rcs" | grep -c '^249$')
		busy_total=$((busy_total + busy))
		timedout_total=$((timedout_total + timedout))
		# shellcheck disable=SC2016 # expanded inside the root
		Q 'kill $(cat /tmp/d4.listen)' >/dev/null
		[ "${#missing[@]}" -eq 0 ] ||
			lost+=("run $r: no withdrawal event of ${missing[*]} (of 12 calls $busy refused busy, $timedout timed out);")
	done
	conf_good
	ensure_running >/dev/null
	if [ "${#lost[@]}" -eq 0 ]; then
		pass "d4 withdrawal events after a burst of 12 checks, $runs runs, every VIP (calls refused busy: $busy_total, timed out: $timedout_total)"
	else
		fail d4 "${#lost[@]} of $runs runs lost events: ${lost[*]}"
	fi
}

# The good file's 3 VIPs and 9,997 `always` VIPs (10.88.1.0 to
# 10.88.40.12): the 10,000 the configuration allows.
MANY=10000
conf_many() {
	local i
	conf_good
	for ((i = 0; i < MANY - 3; i++)); do
		printf "config vip 'm%d'\n\toption prefix '10.88.%d.%d/32'\n\toption always '1'\n\n" \
			"$i" $((i / 256 + 1)) $((i % 256))
	done >>"$CONF"
}
route_count() { birdc -s "$BIRD_SOCK" show route protocol pathosd count 2>/dev/null | awk '/routes? for/ { print $1; exit }'; }
route_count_is() { [ "$(route_count)" = "$1" ]; }
d17() {
	ensure_running || { fail d17 "precondition: not running"; return; }
	conf_many
	X '/etc/init.d/pathosd reload'
	if [ "$RC" != 0 ] || ! wait_for 90 route_count_is "$MANY"; then
		fail d17 "precondition: reload exit $RC, BIRD has $(route_count) routes $(one_line "$O")"
		conf_good
		X '/etc/init.d/pathosd restart'
		return
	fi
	local p n why=''
	p=$(daemon_pid)
	X '/etc/init.d/pathosd restart'
	[ "$RC" = 0 ] || why="$why exit $RC;"
	wait_for 90 route_count_is "$MANY" || why="$why BIRD has $(route_count) routes;"
	n=$(daemon_pid)
	[ -n "$n" ] && [ "$n" != "$p" ] || why="$why PID $p -> '$n' (want a new one);"
	conf_good
	X '/etc/init.d/pathosd reload'
	wait_for 90 routes_are "$ALL_ROUTES" || why="$why the good file's reload left BIRD '$(routes)';"
	[ -z "$why" ] && pass "d17 restart at 10,000 VIPs: exit 0, new PID, every VIP back" ||
		fail d17 "$why $(one_line "$O")"
}
d9_width() {
	local w=$1 name="d9-pid-$1-digits" last p
	last=$((10 ** (w - 1) - 1))
	if [ "$w" -ge 7 ]; then
		local max
		max=$(cat /proc/sys/kernel/pid_max)
		if [ "$max" -le $((last + 10000)) ]; then
			PID_MAX_WAS=$max
			echo 4194304 >/proc/sys/kernel/pid_max || { fail "$name" "cannot raise kernel.pid_max"; return; }
		fi
	fi
	ensure_stopped || { fail "$name" "precondition: could not stop"; return; }
	conf_good
	X "echo $last >/proc/sys/kernel/ns_last_pid && /etc/init.d/pathosd start"
	if [ "$RC" != 0 ]; then fail "$name" "start: exit $RC: $(one_line "$O")"; return; fi
	wait_for 30 routes_are "$ALL_ROUTES"
	p=$(daemon_pid)
	if [ "${#p}" != "$w" ]; then
		fail "$name" "the daemon got PID '$p', not $w digits"
	elif wait_for 10 sh -c "bash '$BOOT' exec '$ROOT' '/sbin/logread -e pathosd' | grep -qF 'pathosd[$p]: '"; then
		pass "$name logread -e pathosd finds the daemon's lines (PID $p)"
	else
		fail "$name" "PID $p: logread -e pathosd has no 'pathosd[$p]: ' line; its lines: $(one_line "$(Q '/sbin/logread' | grep -F "$p" | tail -n 3)")"
	fi
	ensure_stopped
	if [ -n "$PID_MAX_WAS" ]; then echo "$PID_MAX_WAS" >/proc/sys/kernel/pid_max && PID_MAX_WAS=''; fi
	ensure_running >/dev/null
}

# Milliseconds since the epoch, for the watchdog flows' timings.
now_ms() { date +%s%3N; }
# new_daemon PID: procd runs a daemon other than PID.
new_daemon() {
	local n
	n=$(daemon_pid)
	[ -n "$n" ] && [ "$n" != "$1" ]
}
W_TIMEOUT=30 # the init script's PATHOSD_WATCHDOG
W_TERM=5     # its term_timeout: a stopped daemon dies at procd's SIGKILL
# w1: a stalled daemon (SIGSTOP) is killed and respawned by procd's
# watchdog, and its routes come back in BIRD. Timed from the SIGSTOP.
w1() {
	ensure_running || { fail w1 "precondition: not running"; return; }
	local p t0 t_new t_back why='' wd mode
	p=$(daemon_pid)
	wd=$(Q 'ubus -t 5 call service list "{\"name\":\"pathosd\"}" | jsonfilter -e "@.pathosd.instances.instance1.watchdog.timeout"')
	mode=$(Q 'ubus -t 5 call service list "{\"name\":\"pathosd\"}" | jsonfilter -e "@.pathosd.instances.instance1.watchdog.mode"')
	[ "$wd" = "$W_TIMEOUT" ] && [ "$mode" = 1 ] || why="$why procd's watchdog of instance1: mode '$mode', timeout '$wd';"
	Q '/sbin/logread -e pathosd' | grep -qF "procd watchdog on: pinging service pathosd instance instance1" ||
		why="$why no 'procd watchdog on' in the log;"
	# Pinged: the same daemon runs past the watchdog time.
	wait_for $((W_TIMEOUT + 5)) new_daemon "$p" && why="$why replaced while running (PID $p -> $(daemon_pid));"
	p=$(daemon_pid)
	mark w1
	t0=$(now_ms)
	Q "kill -STOP $p" >/dev/null
	if wait_for $((W_TIMEOUT + W_TERM + 10)) new_daemon "$p"; then
		t_new=$(($(now_ms) - t0))
	else
		Q "kill -CONT $p" >/dev/null
		fail w1 "$why no new daemon $((W_TIMEOUT + W_TERM + 10)) s after SIGSTOP of $p"
		return
	fi
	alive "$p" && why="$why the stopped daemon $p still exists;"
	[ "$t_new" -ge $((W_TIMEOUT * 1000 - 1000)) ] || why="$why replaced after $t_new ms, before the watchdog time;"
	[ "$t_new" -le $(((W_TIMEOUT + W_TERM + 3) * 1000)) ] || why="$why replaced after $t_new ms;"
	if wait_for 120 routes_are "$ALL_ROUTES"; then
		t_back=$(($(now_ms) - t0))
	else
		why="$why routes not back: BIRD '$(routes)';"
	fi
	# BIRD keeps the hold-timer error's delay (`error wait time`) for
	# every later start of the session, up to `error forget time`: a
	# protocol restart clears it for the flows after this one (they wait
	# for their routes themselves).
	birdc -s "$BIRD_SOCK" restart pathosd >/dev/null 2>&1
	[ -z "$why" ] && pass "w1 SIGSTOP: procd replaced pathosd after $t_new ms (watchdog $W_TIMEOUT s + term_timeout $W_TERM s), every VIP back in BIRD after ${t_back} ms; not replaced while running" ||
		fail w1 "$why (replaced after ${t_new:-?} ms, routes back after ${t_back:-?} ms)"
}
# w2: with api.ubus_socket off the daemon still pings procd (through a
# client of ubusd's default socket with no object): the same daemon runs
# past the watchdog time.
w2() {
	ensure_stopped || { fail w2 "precondition: could not stop"; return; }
	conf_sed "/option log_level/a\\	option ubus_socket ''"
	mark w2
	X '/etc/init.d/pathosd start'
	local p why=''
	if ! wait_for 30 routes_are "$ALL_ROUTES"; then
		conf_good
		fail w2 "not started: exit $RC, BIRD '$(routes)': $(one_line "$O")"
		return
	fi
	p=$(daemon_pid)
	wait_for $((W_TIMEOUT + 10)) new_daemon "$p" && why="$why replaced (PID $p -> $(daemon_pid));"
	log_has w2 "ubus: connected to ubusd (no object: watchdog pings only)" || why="$why no 'watchdog pings only' line;"
	Q 'ubus list pathosd' 2>/dev/null | grep -q pathosd && why="$why object pathosd registered;"
	conf_good
	X '/etc/init.d/pathosd restart'
	[ -z "$why" ] && pass "w2 api.ubus_socket off: still pinging, the same daemon $((W_TIMEOUT + 10)) s later, no ubus object" ||
		fail w2 "$why"
}

# --- procd's instance life cycle: stop, start while stopping, start while running ---

# ps_watch FILE: every 20 ms until FILE.stop exists (at most 60 s), one line
# in FILE: the time in ms and the namespace PIDs of every `pathosd run` in
# the root, read from the host's /proc (no exec into the root per sample).
# A process between fork and exec still has procd's command line, and a
# zombie has none: neither is a daemon. Sets WATCH to the poller's PID.
WATCH=''
ps_watch() {
	local pid1
	pid1=$(bash "$BOOT" pid "$ROOT") || return 1
	rm -f "$1" "$1.stop"
	python3 -c '
import os, sys, time
pid1, out = sys.argv[1], sys.argv[2]
ns = os.readlink("/proc/%s/ns/pid" % pid1)
end = time.time() + 60
with open(out, "w") as f:
    while not os.path.exists(out + ".stop") and time.time() < end:
        seen = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.readlink("/proc/%s/ns/pid" % d) != ns:
                    continue
                with open("/proc/%s/cmdline" % d, "rb") as c:
                    argv = c.read().split(b"\0")
                if not (argv[0].endswith(b"/pathosd") and len(argv) > 1 and argv[1] == b"run"):
                    continue
                with open("/proc/%s/status" % d) as st:
                    seen += [l.split()[-1] for l in st if l.startswith("NSpid:")]
            except OSError:
                continue
        f.write("%d %s\n" % (time.time() * 1000, " ".join(sorted(seen))))
        f.flush()
        time.sleep(0.02)
' "$pid1" "$1" &
	WATCH=$!
	STARTED+=("$WATCH")
	wait_for 5 test -s "$1"
}
ps_watch_end() {
	touch "$1.stop"
	wait "$WATCH" 2>/dev/null
}
# From ps_watch's FILE: the most daemons seen at once; the first and the
# last time PID was seen (empty if never).
ps_most() { awk '{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' "$1"; }
ps_first() { awk -v p="$2" '{ for (i = 2; i <= NF; i++) if ($i == p) { print $1; exit } }' "$1"; }
ps_last() { awk -v p="$2" '{ for (i = 2; i <= NF; i++) if ($i == p) t = $1 } END { print t }' "$1"; }
# The daemon PIDs in the watch's last sample.
ps_now() { tail -n 1 "$1" | cut -d ' ' -f 2-; }
# sleep_until MS: until the time MS (now_ms's clock), if it is still ahead.
sleep_until() {
	local d=$(($1 - $(now_ms)))
	[ "$d" -le 0 ] || sleep "$((d / 1000)).$(printf '%03d' $((d % 1000)))"
}
# BIRD's count of withdrawals received from pathosd.
withdraws() { birdc -s "$BIRD_SOCK" show protocols all pathosd 2>/dev/null | awk '/Import withdraws:/ { print $3; exit }'; }

# u1: opkg's upgrade runs the old package's prerm (`stop`) and at once the
# new one's postinst (`start`). procd answers the stop with SIGTERM and the
# start, while the instance is still ending, by marking it for a restart:
# the new daemon starts when the old one exits, never beside it.
u1() {
	ensure_running || { fail u1 "precondition: not running"; return; }
	conf_sed "/option log_level/a\\	option shutdown_drain '2s'"
	X '/etc/init.d/pathosd reload'
	if [ "$RC" != 0 ]; then conf_good; fail u1 "precondition: reload to shutdown_drain 2s: exit $RC: $(one_line "$O")"; return; fi
	local p n t0 t_ret t_old t_new t_back='' why='' watch="$WORK/u1.ps" start_out="$WORK/u1.start"
	p=$(daemon_pid)
	mark u1
	ps_watch "$watch" || { conf_good; fail u1 "precondition: no process watch"; return; }
	t0=$(now_ms)
	X '/etc/init.d/pathosd stop'
	t_ret=$(($(now_ms) - t0))
	[ "$RC" = 0 ] || why="$why stop: exit $RC: $(one_line "$O");"
	rm -f "$start_out" "$start_out.rc"
	(
		bash "$BOOT" exec "$ROOT" '/etc/init.d/pathosd start' >"$start_out" 2>&1
		echo "$? $(now_ms)" >"$start_out.rc"
	) &
	STARTED+=("$!")
	# The drain: the old daemon still runs a second after the stop.
	sleep_until $((t0 + 1000))
	alive "$p" || why="$why the old daemon $p was gone 1 s after the stop;"
	wait_for 70 test -s "$start_out.rc" || why="$why start did not return within 70 s;"
	wait_for $((W_TERM + 5)) new_daemon "$p" || why="$why no new daemon;"
	n=$(daemon_pid)
	if wait_for 30 routes_are "$ALL_ROUTES"; then t_back=$(($(now_ms) - t0)); else why="$why BIRD '$(routes)';"; fi
	ps_watch_end "$watch"
	t_old=$(ps_last "$watch" "$p")
	t_new=$(ps_first "$watch" "$n")
	[ "$(ps_most "$watch")" -le 1 ] || why="$why $(ps_most "$watch") daemons at once: $(awk 'NF > 2' "$watch" | head -n 3 | tr '\n' '|');"
	if [ -z "$t_old" ] || [ -z "$t_new" ]; then
		why="$why the watch saw old '${t_old:-never}', new '${t_new:-never}';"
	else
		t_old=$((t_old - t0)) t_new=$((t_new - t0))
		[ "$t_old" -ge 1000 ] || why="$why the old daemon last seen $t_old ms after the stop;"
		[ "$t_new" -gt "$t_old" ] || why="$why the new daemon seen at $t_new ms, the old until $t_old ms;"
		[ "$t_new" -le $(((W_TERM + 1) * 1000)) ] || why="$why the new daemon only $t_new ms after the stop;"
	fi
	# The start finds the ending daemon still listed as running and asks
	# it to reload (the init script's rule for a running daemon): a daemon
	# that is stopping declines, and that is no rejected file, so the
	# postinst's start must succeed quietly.
	local start_rc='' start_t start_o asked
	read -r start_rc start_t <"$start_out.rc"
	start_o=$(one_line "$(cat "$start_out" 2>/dev/null)")
	[ "$start_rc" = 0 ] || why="$why start: exit ${start_rc:-none};"
	case "$start_o" in *rejected*) why="$why start printed '$start_o';" ;; esac
	asked=$(log_since u1 | grep -F 'ubus: reload failed:' | sed 's/.*ubus: //' | head -n 1)
	conf_good
	X '/etc/init.d/pathosd reload'
	[ -z "$why" ] && pass "u1 stop + start at once, shutdown_drain 2s: stop returned after $t_ret ms; old $p last seen $t_old ms after the stop, new $n seen at $t_new ms, never two at once; every VIP back after $t_back ms; start returned $((start_t - t0)) ms after the stop, exit $start_rc: ${start_o:-no output}; the old daemon's log: ${asked:-no failed reload}" ||
		fail u1 "$why (stop returned after $t_ret ms; start exit ${start_rc:-?}: $start_o)"
}

# u2: apk's post-upgrade runs `start` on the running daemon: procd keeps an
# instance whose command is the same, and no route moves.
u2() {
	ensure_running || { fail u2 "precondition: not running"; return; }
	local p w why=''
	p=$(daemon_pid)
	w=$(withdraws)
	X '/etc/init.d/pathosd start'
	[ "$RC" = 0 ] || why="$why exit $RC;"
	why="$why $(kept "$p")"
	[ "$(withdraws)" = "$w" ] || why="$why BIRD received withdrawals: $w -> $(withdraws);"
	[ -z "${why// /}" ] && pass "u2 start of a running daemon: exit 0, the same PID $p, no route withdrawn${O:+; output: $(one_line "$O")}" ||
		fail u2 "$why output: $(one_line "$O")"
}

# u3: procd's SIGKILL after term_timeout, on a daemon that cannot act on
# the SIGTERM (stopped). Timed from the stop.
u3() {
	ensure_running || { fail u3 "precondition: not running"; return; }
	local p t0 t_ret t_gone='' why='' watch="$WORK/u3.ps"
	p=$(daemon_pid)
	mark u3
	ps_watch "$watch" || { fail u3 "precondition: no process watch"; return; }
	Q "kill -STOP $p" >/dev/null
	t0=$(now_ms)
	X '/etc/init.d/pathosd stop'
	t_ret=$(($(now_ms) - t0))
	[ "$RC" = 0 ] || why="$why stop: exit $RC;"
	if ! wait_for $((W_TERM + 5)) gone "$p"; then
		why="$why $p still there $((W_TERM + 5)) s after the stop;"
		Q "kill -CONT $p" >/dev/null
		wait_for 10 gone "$p" || why="$why and after SIGCONT;"
	fi
	ps_watch_end "$watch"
	t_gone=$(ps_last "$watch" "$p")
	if [ -n "$t_gone" ]; then
		t_gone=$((t_gone - t0))
		[ "$t_gone" -ge $(((W_TERM - 1) * 1000)) ] && [ "$t_gone" -le $(((W_TERM + 1) * 1000)) ] ||
			why="$why gone after $t_gone ms, not ${W_TERM} s ± 1;"
	else
		why="$why the watch never saw $p;"
	fi
	[ -z "$(ps_now "$watch")" ] || why="$why daemons left: $(ps_now "$watch");"
	no_daemon || why="$why procd still has the instance: $(daemon_pid);"
	service_known && why="$why procd still knows the service;"
	wait_for 10 no_routes || why="$why BIRD still has '$(routes)';"
	local killed=no
	log_has u3 'not stopped on SIGTERM, sending SIGKILL instead' && killed=yes
	[ -z "$why" ] && pass "u3 stop of a SIGSTOPped daemon: stop returned after $t_ret ms, $p gone $t_gone ms after the stop (term_timeout $W_TERM s), nothing left, routes withdrawn; procd's 'sending SIGKILL' line in logread: $killed" ||
		fail u3 "$why (stop returned after $t_ret ms; 'sending SIGKILL' in logread: $killed)"
}

t23() {
	ensure_running || { fail t23 "precondition: not running"; return; }
	local p why=''
	p=$(daemon_pid)
	X "opkg install $IPK2_IN"
	[ "$RC" = 0 ] || why="$why exit $RC;"
	is_good || why="$why /etc/config/pathosd changed;"
	cmp -s "$ROOT/etc/config/pathosd-opkg" "$SHIPPED" || why="$why no pathosd-opkg with the new default;"
	wait_for 30 routes_are "$ALL_ROUTES" || why="$why BIRD '$(routes)';"
	local n
	n=$(daemon_pid)
	[ -n "$n" ] && [ "$n" != "$p" ] || why="$why PID $p -> '$n' (want a new one);"
	Q 'opkg list-installed' | grep -q 'pathosd - .*-r2' || why="$why r2 not installed;"
	[ -z "$why" ] && pass "t23 opkg install r2 over the modified config: kept, pathosd-opkg, restarted" ||
		fail t23 "$why $(one_line "$O")"
}
t24() {
	local why=''
	X 'opkg remove pathosd'
	[ "$RC" = 0 ] || why="$why exit $RC;"
	wait_for 15 no_daemon || why="$why daemon runs;"
	wait_for 15 no_routes || why="$why BIRD '$(routes)';"
	compgen -G "$ROOT/etc/rc.d/*pathosd" >/dev/null && why="$why boot links left;"
	is_good || why="$why modified config not kept;"
	printf '%s' "$O" | grep -q 'Not deleting modified conffile' || why="$why no 'Not deleting modified conffile';"
	[ -z "$why" ] && pass "t24 opkg remove: exit 0, stopped, links gone, modified config kept" ||
		fail t24 "$why $(one_line "$O")"
}

for f in t01 t02 t03 t04 t05 t06; do
	# The first six build on each other: run them all when any is asked for.
	if [ -z "$ONLY" ] || [[ t01t02t03t04t05t06 =~ $ONLY ]] || want "$f"; then "$f"; fi
done
# Later flows need the package (a run --only them skips t01).
Q 'opkg list-installed' | grep -q '^pathosd ' || Q "opkg install $IPK1_IN" >/dev/null
for f in t07 t08 t09 t10 t11 t12 t13 t14 t15 t16 t17 t18 t19 t20 t21 t22; do
	want "$f" && "$f"
done
for v in empty comments deleted renamed anonymous; do
	for a in reload reload_config start restart; do
		want "d1-$v-$a" && d1_variant "$v" "$a"
	done
done
want d2 && d2
want d3 && d3
want d4 && d4
for w in 3 4 5 7; do want "d9-pid-$w-digits" && d9_width "$w"; done
want d17 && d17
# w2 before w1: w1's stall ends the BGP session on BIRD's hold timer, and
# BIRD then delays every later session by its `error wait time` (60 s by
# default) until w1 restarts the protocol.
want w2 && w2
want w1 && w1
for f in u1 u2 u3; do want "$f" && "$f"; done
want t23 && t23
want t24 && t24
bash "$BOOT" stop "$ROOT_OPKG" >/dev/null

# ==================================================================================
# The apk root: the .apk with apk-tools v3.
# ==================================================================================

if want_any a1 a2 a3 a4 a5 a6 a7; then
	echo "# apk root: $ROOT_APK"
	new_root "$ROOT_APK"
	APK1_IN="/root/pkgs/$(basename "$APK1")"
	APK2_IN="/root/pkgs/$(basename "$APK2")"
	# What an image has (libc), made with apk mkpkg.
	mkdir -p "$WORK/apk-stub/empty"
	if "$OUT/bin/apk" mkpkg --info name:libc --info version:1.2.5-r4 --info arch:x86_64 \
		--info "description:C library (stand-in)" --files "$WORK/apk-stub/empty" \
		--output "$ROOT/root/pkgs/libc.apk" >"$WORK/apk-stub/mkpkg.log" 2>&1; then
		X 'apk add --initdb --allow-untrusted /root/pkgs/libc.apk'
		[ "$RC" = 0 ] && pass "a1 apk add --initdb: the database, with libc" || fail a1 "exit $RC: $(one_line "$O")"
	else
		fail a1 "apk mkpkg of the libc stub failed: $(one_line "$(cat "$WORK/apk-stub/mkpkg.log")")"
	fi
	X "apk add $APK1_IN"
	if [ "$RC" = 99 ] && printf '%s' "$O" | grep -q 'UNTRUSTED signature'; then
		pass "a2 apk add of the unsigned package: UNTRUSTED signature, exit 99"
	else
		fail a2 "exit $RC: $(one_line "$O")"
	fi
	X "apk add --allow-untrusted $APK1_IN"
	why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	printf '%s' "$O" | grep -q 'Executing pathosd-.*-r1.post-install' || why="$why post-install not run;"
	[ -L "$ROOT/etc/rc.d/S80pathosd" ] && [ -L "$ROOT/etc/rc.d/K05pathosd" ] || why="$why no S80/K05;"
	[ -z "$(daemon_pid)" ] || why="$why started;"
	[ -z "$why" ] && pass "a3 apk add --allow-untrusted: installed, post-install, S80/K05, not started" ||
		fail a3 "$why $(one_line "$O")"
	conf_good
	X '/etc/init.d/pathosd start'
	if [ "$RC" = 0 ] && wait_for 30 routes_are "$ALL_ROUTES"; then
		pass "a4 configured and started: VIPs in BIRD"
	else
		fail a4 "exit $RC, BIRD '$(routes)': $(one_line "$O")"
	fi
	X "apk add --allow-untrusted $APK2_IN"
	why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	printf '%s' "$O" | grep -q 'Upgrading pathosd (.*-r1 -> .*-r2)' || why="$why no 'Upgrading pathosd';"
	printf '%s' "$O" | grep -q 'post-upgrade' || why="$why post-upgrade not run;"
	is_good || why="$why /etc/config/pathosd changed;"
	cmp -s "$ROOT/etc/config/pathosd.apk-new" "$SHIPPED" || why="$why no pathosd.apk-new with the new default;"
	[ -L "$ROOT/etc/rc.d/S80pathosd" ] || why="$why boot link gone;"
	wait_for 30 routes_are "$ALL_ROUTES" && [ -n "$(daemon_pid)" ] || why="$why not running: BIRD '$(routes)';"
	[ -z "$why" ] && pass "a5 apk add r2: upgraded, modified config kept, apk-new, running" ||
		fail a5 "$why $(one_line "$O")"
	X 'apk audit --system'
	[ "$RC" = 0 ] && [ -z "$O" ] && pass "a6 apk audit --system: nothing" || fail a6 "exit $RC: $(one_line "$O")"
	X 'apk del pathosd'
	why=''
	[ "$RC" = 0 ] || why="$why exit $RC;"
	printf '%s' "$O" | grep -q 'pre-deinstall' || why="$why pre-deinstall not run;"
	wait_for 15 no_daemon || why="$why daemon runs;"
	wait_for 15 no_routes || why="$why BIRD '$(routes)';"
	compgen -G "$ROOT/etc/rc.d/*pathosd" >/dev/null && why="$why boot links left;"
	is_good || why="$why modified config not kept;"
	[ -z "$why" ] && pass "a7 apk del: stopped, links gone, modified config kept" || fail a7 "$why $(one_line "$O")"
	bash "$BOOT" stop "$ROOT_APK" >/dev/null
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
