#!/bin/sh
# Behaviour of files/pathosd.init under the stand-ins of OpenWrt's rc.common,
# procd, reload_config, uci and jsonfilter (tests/packaging/fakeroot/, each
# saying what it keeps of the real parts), with logger, the pathosd binary,
# the running daemon's reload and the ubus CLI with its object mocked here;
# run by busybox ash (the shell of OpenWrt) from scripts/test-packaging.sh.
# Prints one "ok - NAME" / "not ok - NAME" per case.
#
# Each command runs as on the router, `/etc/init.d/pathosd ACTION` being
# `sh /etc/rc.common /etc/init.d/pathosd ACTION` in a fake root; the init
# script is the shipped one with only PROG pointing at the mock. The cases
# compare what the script declared (procd.log), what procd then did to the
# daemon (procd.events), how the daemon was asked to reload and what it
# recorded, the exit status, the log and stderr.
#
# PATHOSD_INIT=FILE runs the cases against another init script, for example
# an older one from git, to see that a new case fails without its fix.

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
INIT=${PATHOSD_INIT:-$ROOT/files/pathosd.init}
SHIPPED="$ROOT/files/pathosd.config"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-init.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"

# The init script as rc.common reads it (its shebang line is a comment).
if out=$(
	# shellcheck source=files/pathosd.init
	. "$INIT"
	echo "$PROG $CONFIG $START $STOP $USE_PROCD"
) && [ "$out" = "/usr/sbin/pathosd /etc/config/pathosd 80 05 1" ]; then
	ok "init: PROG, CONFIG, START=80, STOP=05, USE_PROCD=1"
else
	not_ok "init: PROG, CONFIG, START=80, STOP=05, USE_PROCD=1" "got: $out"
fi

# The reload_config stand-in is linted here, beside the other stand-ins that
# scripts/test-packaging.sh lints (a missing shellcheck fails the case).
if out=$(shellcheck -s sh "$ROOT/tests/packaging/fakeroot/reload_config" 2>&1); then
	ok "shellcheck -s sh tests/packaging/fakeroot/reload_config"
else
	not_ok "shellcheck -s sh tests/packaging/fakeroot/reload_config" "$out"
fi

# --- the fake root -------------------------------------------------------

FR="$TMP/root"
mkdir -p "$FR/etc/config" "$FR/etc/init.d" "$FR/etc/rc.d" "$FR/tmp" "$FR/sbin" "$TMP/bin"
printf "config system\n\toption hostname 'OpenWrt'\n" >"$FR/etc/config/system"
cp "$ROOT/tests/packaging/fakeroot/rc.common" "$FR/etc/rc.common"
cp "$ROOT/tests/packaging/fakeroot/reload_config" "$FR/sbin/reload_config"
# uci and jsonfilter, found on PATH as on the router.
cp "$ROOT/tests/packaging/fakeroot/uci" "$TMP/bin/uci"
cp "$ROOT/tests/packaging/fakeroot/jsonfilter" "$TMP/bin/jsonfilter"
sed "s#^PROG=/usr/sbin/pathosd\$#PROG=$TMP/pathosd#" "$INIT" >"$FR/etc/init.d/pathosd"
if ! grep -qx "PROG=$TMP/pathosd" "$FR/etc/init.d/pathosd"; then
	not_ok "the init script sets PROG=/usr/sbin/pathosd on a line of its own"
	exit 1
fi
# `sh` is busybox ash here, as on the router.
ln -s "$(command -v busybox)" "$TMP/bin/sh"
PATH="$TMP/bin:$PATH"
export PATH

LOG="$FR/tmp/procd.log"
EVENTS="$FR/tmp/procd.events"
STATE="$FR/tmp/procd.state"
CALLS="$TMP/pathosd.calls"
# The running daemon's reloads: one line each, how it was asked ("SIGHUP"
# or "ubus"), and the outcome of the last one, as its last_reload.result.
RELOADS="$FR/tmp/daemon.reloads"
LAST_RELOAD="$FR/tmp/daemon.last_reload"
export CALLS FR RELOADS LAST_RELOAD

# A fake pathosd: records its arguments. `validate` reads the file as the
# real one does in what matters here: a quote left open is an error at the
# line libuci reports for it (the file's last: libuci reads to the end
# looking for the closing quote), a file of blank and comment lines is
# empty, the global section must
# be `config pathosd 'main'` (crates/pathosd-core/src/config/uci_map/),
# `enabled` of 'main' is not looked at (it is the init script's switch);
# $MOCK_INVALID adds the errors of an invalid value. Failures print the
# real one's lines (exit 1, stderr).
cat >"$TMP/pathosd" <<'EOF'
#!/bin/sh
echo "$*" >>"$CALLS"
[ "$1" = validate ] || exit 0
open=$(awk '{ s = $0; gsub(/[^\047]/, "", s); if (length(s) % 2) { print NR; exit } }' "$FR$3")
if [ -n "$open" ]; then
	line=$(wc -l <"$FR$3" | tr -d ' ')
	echo "pathosd: $3: invalid configuration (1 error):" >&2
	echo "line $line: unterminated ' quote" >&2
	exit 1
fi
if ! grep -qv -e '^[[:space:]]*$' -e '^[[:space:]]*#' "$FR$3"; then
	echo "pathosd: $3: invalid configuration (1 error):" >&2
	echo "the config is empty (nothing but whitespace and comments)" >&2
	exit 1
fi
main=$(awk '
	function unq(s) { gsub(/^["\047]|["\047]$/, "", s); return s }
	$1 == "config" && unq($2) == "pathosd" {
		if (unq($3) == "main") print "ok"
		else if ($3 == "") print "@pathosd[0] (line " NR ")"
		else print "pathosd \047" unq($3) "\047 (line " NR ")"
		exit
	}' "$FR$3")
case "$main" in
	ok) ;;
	"")
		echo "pathosd: $3: invalid configuration (1 error):" >&2
		echo "config pathosd 'main': missing (it holds asn, router_id and the other global settings, and the init script's option enabled)" >&2
		exit 1
		;;
	*)
		echo "pathosd: $3: invalid configuration (1 error):" >&2
		echo "$main: the pathosd section must be named 'main' (config pathosd 'main'): the init script and LuCI read its option enabled there" >&2
		exit 1
		;;
esac
if [ -n "$MOCK_INVALID" ]; then
	echo "pathosd: $3: invalid configuration (2 errors):" >&2
	echo "vip 'web' option prefix (line 3): not a prefix" >&2
	echo "config neighbor: at least one neighbor is required" >&2
	exit 1
fi
echo "configuration is valid"
EOF
chmod +x "$TMP/pathosd"

# The running daemon's reload (src/daemon/owner/reloading.rs), asked by VIA
# (SIGHUP or ubus): the file loaded with the rules of `validate` above;
# rejected, or applied, or, with $MOCK_API_TAKEN, applied but for the API's
# new address; $MOCK_NEEDS_RESTART names a setting that waits for a
# restart. Records it and prints ubus `reload`'s answer: the record's
# members and `reloaded` (docs/api.md), or nothing and status 2 when the
# file is rejected.
cat >"$TMP/pathosd-reload" <<'EOF'
#!/bin/sh
# A signal has no answer.
[ "$1" = HUP ] && { set -- SIGHUP; exec >/dev/null; }
echo "$1" >>"$RELOADS"
time='"time":"2026-12-04T10:00:00Z"'
if ! CALLS=/dev/null "$(dirname "$0")/pathosd" validate --config /etc/config/pathosd >/dev/null 2>&1; then
	echo rejected >"$LAST_RELOAD"
	exit 2
fi
if [ -n "$MOCK_API_TAKEN" ]; then
	echo partially_applied >"$LAST_RELOAD"
	echo "{\"reloaded\":true,$time,\"result\":\"partially_applied\",\"errors\":[\"api.listen 127.0.0.1:80: cannot listen (Address in use (os error 98)); the API stays on http://127.0.0.1:59179 with its old settings\"],\"needs_restart\":[]}"
	exit 0
fi
echo applied >"$LAST_RELOAD"
needs=${MOCK_NEEDS_RESTART:+\"$MOCK_NEEDS_RESTART\"}
echo "{\"reloaded\":true,$time,\"result\":\"applied\",\"errors\":[],\"needs_restart\":[$needs]}"
EOF
chmod +x "$TMP/pathosd-reload"
# procd's signals reach it (the rc.common stand-in runs this).
PROCD_INSTANCE_SIGNAL="$TMP/pathosd-reload"
export PROCD_INSTANCE_SIGNAL

# The ubus CLI with the daemon's object (openwrt/ubus cli.c): `call pathosd
# reload` looks the object up (status 4, "Command failed: Not found", when
# the daemon is not running or $MOCK_NO_UBUS says it has no object), then
# invokes: the answer on stdout, or "Command failed: ubus call …" and 256
# minus the status, stderr not being a terminal. $MOCK_UBUS_TIMEOUT: the
# answer does not come (7), the request stays with the daemon.
cat >"$TMP/bin/ubus" <<'EOF'
#!/bin/sh
echo "ubus $*" >>"$FR/tmp/ubus.calls"
[ "$1" = -t ] && shift 2
if [ "$1 $2 $3 $#" != "call pathosd reload 3" ]; then
	echo "ubus stand-in: only call pathosd reload" >&2
	exit 1
fi
if [ ! -s "$FR/tmp/procd.state" ] || [ -n "$MOCK_NO_UBUS" ]; then
	echo "Command failed: Not found" >&2
	exit 4
fi
if [ -s "$FR/tmp/procd.state.linger" ]; then
	# The daemon is stopping: it takes no request (UNKNOWN_ERROR).
	echo "Command failed: ubus call pathosd reload (Unknown error)" >&2
	exit 247
fi
if [ -n "$MOCK_UBUS_TIMEOUT" ]; then
	echo "ubus" >>"$RELOADS"
	echo "Command failed: ubus call pathosd reload (Request timed out)" >&2
	exit 249
fi
if ! "$(dirname "$0")/../pathosd-reload" ubus; then
	echo "Command failed: ubus call pathosd reload (Invalid argument)" >&2
	exit 254
fi
EOF
chmod +x "$TMP/bin/ubus"

# config LINE...: /etc/config/pathosd of the fake root.
config() {
	printf '%s\n' "$@" >"$FR/etc/config/pathosd"
}
# The daemon's state before a command: "running" (started by the init
# script under test from an earlier file: procd's instance has no `file`,
# as this script declares it) or "stopped"; no reload yet either way.
daemon() {
	if [ "$1" = running ]; then
		echo "running file=" >"$STATE"
	else
		rm -f "$STATE"
	fi
	rm -f "$LAST_RELOAD"
}
# Empties the logs of one command.
fresh() {
	: >"$LOG"
	: >"$EVENTS"
	: >"$CALLS"
	: >"$RELOADS"
	: >"$FR/tmp/ubus.calls"
}
# rc ACTION: /etc/init.d/pathosd ACTION; sets RC, logs in $LOG, $EVENTS,
# $CALLS, $RELOADS and $TMP/stderr.
rc() {
	fresh
	IPKG_INSTROOT="$FR" sh "$FR/etc/rc.common" "$FR/etc/init.d/pathosd" "$@" 2>"$TMP/stderr"
	RC=$?
}
# reload_config, as after a commit; sets RC like rc.
reload_config() {
	fresh
	IPKG_INSTROOT="$FR" sh "$FR/sbin/reload_config" 2>"$TMP/stderr"
	RC=$?
}
running() { [ -s "$STATE" ]; }
# reloaded VIA...: the daemon was asked to reload exactly so (one line per
# reload, e.g. `reloaded ubus`); `reloaded` alone: not at all.
reloaded() { [ "$(cat "$RELOADS")" = "$(printf '%s\n' "$@" | sed '/^$/d')" ]; }
last_reload() { [ "$(cat "$LAST_RELOAD" 2>/dev/null)" = "$1" ]; }
logged() { grep -F -- "$1" "$LOG" >/dev/null; }
said() { grep -F -- "$1" "$TMP/stderr" >/dev/null; }
event() { grep -Fx -- "$1" "$EVENTS" >/dev/null; }
state() {
	echo "exit $RC; running: $(running && echo yes || echo no)"
	echo "procd.log: $(cat "$LOG")"
	echo "procd events: $(cat "$EVENTS")"
	echo "daemon reloads: $(cat "$RELOADS"); last_reload: $(cat "$LAST_RELOAD" 2>/dev/null)"
	echo "stderr: $(cat "$TMP/stderr")"
}
# expect STATUS NAME: the case NAME passed if the condition just tested
# (its status) held.
expect() {
	if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2" "$(state)"; fi
}

INSTANCE="open_instance instance1
set_param command $TMP/pathosd run --config /etc/config/pathosd
set_param watchdog 1 30
set_param env PATHOSD_PROCD_WATCHDOG=pathosd instance1 30
set_param respawn
set_param stdout 1
set_param stderr 1
set_param term_timeout 5
close_instance"
declared() { [ "$(grep -v -e '^logger ' -e '^start ' -e '^reload ' -e '^stop ' "$LOG")" = "$INSTANCE" ]; }
nothing_declared() { ! grep -F open_instance "$LOG" >/dev/null; }

ENABLED="config pathosd 'main'
	option enabled '1'
	option asn '65001'"

# --- start -----------------------------------------------------------------

# The package's postinst runs `start` on the shipped config: it must be inert.
cp "$SHIPPED" "$FR/etc/config/pathosd"
daemon stopped
rc start
[ "$RC" = 0 ] && nothing_declared && [ ! -s "$CALLS" ] && ! running
expect $? "start, shipped config: exit 0, no instance, pathosd not even run"

config "$ENABLED"
daemon stopped
rc start
[ "$RC" = 0 ] && declared && event "instance started" && [ "$(cat "$CALLS")" = "validate --config /etc/config/pathosd" ]
expect $? "start, enabled and valid: pathosd validate first, then one instance (command, watchdog and its env, respawn, stdout, stderr, term_timeout 5)"

# procd's watchdog: armed (mode 1) for at least 10 s, and the daemon told
# the service, the instance procd has and the same time; no reload_signal,
# which procd's watchdog expiry would send instead of restarting the daemon.
wd="$(sed -n 's/^set_param watchdog 1 //p' "$LOG")"
inst="$(sed -n 's/^open_instance //p' "$LOG")"
[ -n "$wd" ] && [ -n "$inst" ] && [ "$wd" -ge 10 ] &&
	grep -Fx "set_param env PATHOSD_PROCD_WATCHDOG=pathosd $inst $wd" "$LOG" >/dev/null &&
	! grep -F reload_signal "$LOG" >/dev/null
expect $? "start: procd's watchdog armed ($wd s) for instance '$inst', which the daemon's PATHOSD_PROCD_WATCHDOG names with the same time; no reload_signal"

config "config pathosd 'main'" "	option enabled '0'"
rc start
[ "$RC" = 0 ] && nothing_declared && [ ! -s "$CALLS" ] && ! running
expect $? "start, enabled '0': exit 0, nothing started"

config "config pathosd 'main'" "	option asn '65001'"
rc start
[ "$RC" = 0 ] && nothing_declared && ! running && logged "not set (disabled by default): not starting"
expect $? "start, no enabled option: disabled by default, exit 0, said so"

config "config neighbor 'bird'" "	option enabled '1'"
rc start
[ "$RC" != 0 ] && nothing_declared && ! running && said "config pathosd 'main': missing" &&
	logged "start refused: invalid configuration; pathosd is not running"
expect $? "start, no main section: refused as invalid (the daemon's reason), exit non-zero"

config "config pathosd main" "	option enabled on"
rc start
[ "$RC" = 0 ] && declared && event "instance started"
expect $? "start, enabled on (bare words): started, as the daemon reads it"

# rc.common's start ignores start_service's status: a refused start must
# still exit non-zero.
config "config pathosd 'main'" "	option enabled 'maybe'"
daemon stopped
rc start
[ "$RC" != 0 ] && nothing_declared && ! running && event "set: no instance" &&
	logged "start refused: invalid configuration; pathosd is not running" &&
	said "pathosd.main.enabled=maybe validates as bool with false"
expect $? "start, enabled 'maybe', stopped: refused, exit non-zero, logged; the service registered without an instance (its reload trigger starts it once fixed)"

daemon running
rc start
[ "$RC" != 0 ] && running && [ ! -s "$EVENTS" ] && logged "keeps its previous one"
expect $? "start, enabled 'maybe', running: refused, exit non-zero, nothing sent to procd (no stop, no SIGHUP: the daemon would apply the file)"

MOCK_INVALID=1
export MOCK_INVALID
config "$ENABLED"
daemon stopped
rc start
[ "$RC" != 0 ] && nothing_declared && ! running &&
	logged "daemon.err vip 'web' option prefix (line 3): not a prefix" &&
	logged "daemon.err config neighbor: at least one neighbor is required" &&
	logged "daemon.err /etc/config/pathosd: invalid configuration (2 errors):" &&
	logged "start refused: invalid configuration; pathosd is not running" &&
	said "pathosd: vip 'web' option prefix (line 3): not a prefix"
expect $? "start, invalid config, stopped: refused, exit non-zero, every error line in the log and on stderr"

config "$ENABLED" "config vip 'broken"
rc start
[ "$RC" != 0 ] && nothing_declared && ! running && logged "line 4: unterminated ' quote"
expect $? "start, UCI syntax error, stopped: refused, exit non-zero, the parser's line in the log"

config "$ENABLED"
daemon running
rc start
[ "$RC" != 0 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload rejected &&
	logged "keeps its previous one"
expect $? "start, invalid config, running: refused, exit non-zero, nothing sent to procd; the daemon asked to reload once (it rejects the file and records it)"
MOCK_INVALID=

# --- reload ------------------------------------------------------------------

config "$ENABLED"
daemon running
rc reload
[ "$RC" = 0 ] && declared && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload applied &&
	! grep -F daemon.err "$LOG" >/dev/null
expect $? "reload, valid, running: the same instance, no signal from procd; the daemon asked once (ubus), applied, exit 0"

MOCK_INVALID=1
daemon running
rc reload
[ "$RC" = 1 ] && nothing_declared && running && [ ! -s "$EVENTS" ] &&
	reloaded ubus && last_reload rejected &&
	logged "daemon.err vip 'web' option prefix (line 3): not a prefix" &&
	logged "daemon.err reload refused: invalid configuration; the running daemon keeps its previous one" &&
	said "pathosd: vip 'web' option prefix (line 3): not a prefix" && said "reload refused"
expect $? "reload, invalid config, running: refused (exit 1), errors logged and on stderr, kept running, asked to reload once so it records the rejection"

daemon stopped
rc reload
[ "$RC" = 1 ] && nothing_declared && ! running && [ ! -s "$EVENTS" ] && reloaded && logged "reload refused"
expect $? "reload, invalid config, stopped: refused (exit 1), nothing started or signalled"
MOCK_INVALID=

# A reload must never stop a running daemon over a broken file.
config "$ENABLED" "config vip 'broken"
daemon running
rc reload
[ "$RC" != 0 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload rejected &&
	logged "line 4: unterminated ' quote" && logged "keeps its previous one" && said "keeps its previous one"
expect $? "reload, UCI syntax error, running: kept running, refused (exit non-zero), the parser's line logged and on stderr, asked to reload once so it records the rejection"

config "config pathosd 'main'" "	option enabled 'maybe'"
daemon running
rc reload
[ "$RC" != 0 ] && running && [ ! -s "$EVENTS" ] && reloaded &&
	logged "keeps its previous one" && said "validates as bool with false"
expect $? "reload, enabled 'maybe', running: kept running, refused (exit non-zero), logged, the daemon not asked to reload (it would apply the file)"

config "config pathosd 'main'" "	option enabled '0'"
daemon running
MOCK_INVALID=1
rc reload
[ "$RC" = 0 ] && nothing_declared && ! running && event "instance stopped" && [ ! -s "$CALLS" ]
expect $? "reload, enabled '0', running: stopped, as asked (no validation, exit 0)"
MOCK_INVALID=

config "$ENABLED"
daemon stopped
rc reload
[ "$RC" = 0 ] && declared && running && event "instance started" && reloaded
expect $? "reload, valid, stopped: started (no reload asked of the new process)"

# --- reload_config: what `uci commit` + reload_config or LuCI's apply run -----

config "$ENABLED"
rm -f "$FR/tmp/config.md5"
daemon stopped
rc start
# The boot's baseline was taken before the file existed.
mv "$FR/etc/config/pathosd" "$TMP/pathosd.saved"
IPKG_INSTROOT="$FR" sh "$FR/sbin/reload_config"
mv "$TMP/pathosd.saved" "$FR/etc/config/pathosd"
config "$ENABLED" "	option hold_time '9s'"
reload_config
[ ! -s "$LOG" ] && [ ! -s "$EVENTS" ]
expect $? "reload_config, first run after the file appeared: nothing runs (the md5 list did not have it)"

config "$ENABLED" "	option hold_time '6s'"
reload_config
logged "reload pathosd" && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload applied
expect $? "reload_config after a change: procd's trigger runs reload, the daemon is asked once (ubus) and applies it"

config "$ENABLED" "config vip 'broken"
daemon running
reload_config
logged "reload pathosd" && running && ! event "instance stopped" && logged "keeps its previous one"
expect $? "reload_config after a UCI syntax error: reload refused, the daemon keeps running"

config "config pathosd 'main'" "	option enabled 'maybe'"
daemon running
reload_config
logged "reload pathosd" && running && ! event "instance stopped"
expect $? "reload_config after enabled 'maybe': the daemon keeps running"

config "config pathosd 'main'" "	option enabled '0'"
daemon running
reload_config
logged "reload pathosd" && ! running && event "instance stopped"
expect $? "reload_config after enabled '0': stopped, as asked"

# --- every valid reload reaches the daemon, once, and says how it went ------

# A reload after a refused one, the file put back as the daemon started
# with it: procd's md5 of the file is the one it took at the start, so
# procd sends nothing; the daemon must still be asked, and its
# last_reload (LuCI's red box) no longer says rejected.
config "$ENABLED"
daemon stopped
rc start
running && event "instance started" && reloaded
expect $? "start, stopped: started, no reload asked"
config "$ENABLED" "config vip 'broken"
rc reload
[ "$RC" = 1 ] && running && last_reload rejected
expect $? "reload, a syntax error after the start: refused, last_reload rejected"
config "$ENABLED"
rc reload
[ "$RC" = 0 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload applied
expect $? "reload, the file put back as it was at the start: applied once, last_reload applied (no longer rejected)"

# The same through reload_config, as `uci commit` + reload_config and
# LuCI's Save & Apply run it.
config "$ENABLED" "config vip 'broken"
reload_config
running && last_reload rejected
expect $? "reload_config, a syntax error: refused, last_reload rejected"
config "$ENABLED"
reload_config
running && reloaded ubus && last_reload applied
expect $? "reload_config, the file put back: applied once, last_reload applied"

# Nothing changed since the last reload: still applied, once.
rc reload
[ "$RC" = 0 ] && reloaded ubus && last_reload applied
expect $? "reload, the same file again: applied once"

rc start
[ "$RC" = 0 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload applied
expect $? "start, running, valid: the same instance, the daemon asked once (ubus), exit 0"

rc restart
[ "$RC" = 0 ] && running && [ "$(cat "$EVENTS")" = "instance stopped
instance started" ] && reloaded
expect $? "restart, running, valid: stopped and started, no reload asked"

MOCK_NEEDS_RESTART=api.ubus_socket
export MOCK_NEEDS_RESTART
rc reload
[ "$RC" = 0 ] && reloaded ubus && said "pathosd: reload: api.ubus_socket changed: applies after a restart"
expect $? "reload, a setting that waits for a restart: applied (exit 0), the setting said"
MOCK_NEEDS_RESTART=

# The daemon without a ubus object (api.ubus_socket off, or not registered
# yet): SIGHUP through procd, once.
MOCK_NO_UBUS=1
export MOCK_NO_UBUS
rc reload
[ "$RC" = 0 ] && [ "$(cat "$EVENTS")" = "signal pathosd" ] && reloaded SIGHUP && last_reload applied &&
	said "reload: sent SIGHUP"
expect $? "reload, valid, no ubus object: SIGHUP through procd, once, exit 0"
MOCK_INVALID=1
export MOCK_INVALID
rc reload
[ "$RC" = 1 ] && running && [ "$(cat "$EVENTS")" = "signal pathosd" ] && reloaded SIGHUP && last_reload rejected
expect $? "reload, invalid, no ubus object: refused, SIGHUP once so that it records the rejection"
MOCK_INVALID=
MOCK_NO_UBUS=

# A valid file the daemon can apply only in part (the API's new address is
# taken): not reported as applied.
MOCK_API_TAKEN=1
export MOCK_API_TAKEN
for action in reload start; do
	rc "$action"
	[ "$RC" = 1 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && last_reload partially_applied &&
		said "pathosd: reload: not applied: api.listen 127.0.0.1:80: cannot listen (Address in use (os error 98)); the API stays on http://127.0.0.1:59179 with its old settings" &&
		logged "daemon.err reload partially applied"
	expect $? "$action, running, the API's new address taken: exit 1, what was not applied and why printed, last_reload partially_applied"
done
config "$ENABLED" "	option hold_time '7s'"
reload_config
running && reloaded ubus && last_reload partially_applied && logged "daemon.err reload partially applied"
expect $? "reload_config, the API's new address taken: partially_applied, logged"
MOCK_API_TAKEN=

# No answer in time: the request stays with the daemon; no second reload.
MOCK_UBUS_TIMEOUT=1
export MOCK_UBUS_TIMEOUT
rc reload
[ "$RC" = 1 ] && running && [ ! -s "$EVENTS" ] && reloaded ubus && logged "did not answer within 55 s" &&
	grep -Fx "ubus -t 55 call pathosd reload" "$FR/tmp/ubus.calls" >/dev/null
expect $? "reload, no answer within 55 s: exit 1, said so, no SIGHUP on top"
MOCK_UBUS_TIMEOUT=

# --- a file without `config pathosd 'main'`: invalid, not disabled ----------

# Each shape with the daemon running, through each way a user or LuCI
# reaches the init script: refused as invalid (the daemon's own reason
# printed and logged), the daemon kept, never stopped.
NOMAIN_REST="config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
config vip 'web'
	option prefix '192.0.2.80/32'"
for shape in empty comments deleted renamed anonymous vip_main; do
	case "$shape" in
		empty) config "" ; why="the config is empty" ;;
		comments) config "# pathosd" "" "#config pathosd 'main'" "#	option enabled '1'" ; why="the config is empty" ;;
		deleted) config "$NOMAIN_REST" ; why="config pathosd 'main': missing" ;;
		renamed) config "config pathosd 'global'" "	option enabled '1'" "$NOMAIN_REST" ; why="pathosd 'global' (line 1): the pathosd section must be named 'main'" ;;
		anonymous) config "config pathosd" "	option enabled '1'" "$NOMAIN_REST" ; why="@pathosd[0] (line 1): the pathosd section must be named 'main'" ;;
		# validate_data finds 'main' whatever its type: a disabled VIP
		# named main is not the switch.
		vip_main) config "config vip 'main'" "	option enabled '0'" "$NOMAIN_REST" ; why="config pathosd 'main': missing" ;;
	esac
	for action in reload start restart reload_config; do
		daemon running
		what=$action
		if [ "$action" = reload_config ]; then
			# Its own status is 0; the reload it runs logs the refusal.
			reload_config
			RC=1
			what=reload
		else
			rc "$action"
		fi
		[ "$RC" != 0 ] && running && ! event "instance stopped" && ! event "set: no instance" &&
			logged "daemon.err $why" && logged "$what refused: invalid configuration; the running daemon keeps its previous one" &&
			! logged "stopping the daemon"
		expect $? "$action, $shape file, running: refused as invalid, the daemon kept (\"$why\")"
	done
done

# `config pathosd 'main'` without `enabled`: disabled by default, so not
# started (above), but not a reason to stop a running daemon either.
for empty_switch in "" "	option enabled ''"; do
	config "config pathosd 'main'" "	option asn '65001'" "$empty_switch"
	for action in reload start restart; do
		daemon running
		rc "$action"
		[ "$RC" != 0 ] && running && [ ! -s "$EVENTS" ] &&
			logged "$action refused: config pathosd 'main' has no option enabled: set it to '1' to run pathosd, '0' to stop it; the running daemon keeps its previous one"
		expect $? "$action, main without enabled${empty_switch:+ (empty)}, running: refused, kept, nothing sent to procd or the daemon"
	done
done

# Only `enabled` off in `config pathosd 'main'` stops pathosd, in any of
# the words the daemon takes for false.
MOCK_INVALID=1
for word in off false no disabled; do
	config "config pathosd 'main'" "	option enabled '$word'"
	daemon running
	rc reload
	[ "$RC" = 0 ] && ! running && event "instance stopped" && [ ! -s "$CALLS" ] &&
		logged "pathosd.main.enabled is off; stopping the daemon"
	expect $? "reload, enabled '$word' (and an invalid value), running: stopped, as asked"
done
MOCK_INVALID=

# --- restart, stop -----------------------------------------------------------

config "$ENABLED"
daemon running
rc restart
[ "$RC" = 0 ] && running && [ "$(cat "$EVENTS")" = "instance stopped
instance started" ]
expect $? "restart, valid, running: stopped, then started"

# procd lists the stopping instance until the daemon has ended: the start
# waits for that, and starts a new one instead of asking the ending daemon
# to reload (at 10,000 VIPs that reload was refused, "daemon is stopping",
# and restart exited 1).
MOCK_STOP_LINGER=3
export MOCK_STOP_LINGER
daemon running
rm -f "$STATE.linger"
rc restart
[ "$RC" = 0 ] && running && reloaded && [ "$(cat "$EVENTS")" = "instance stopping
instance stopped
instance started" ]
expect $? "restart, running, the daemon a moment to end: waited for, then a new instance started, no reload asked, exit 0"

# stop, then start at once, as an opkg upgrade runs the old package's
# prerm and the new one's postinst: the old daemon still ends (its
# shutdown_drain) and takes no reload. The start is no refusal and no
# rejected file; procd starts the new daemon when the old has ended.
daemon running
rm -f "$STATE.linger" "$STATE.restart"
rc stop
rc start
[ "$RC" = 0 ] && ! said "rejected" && event "instance restarts when it has ended" &&
	[ -s "$STATE.restart" ] && logged "reload: sent SIGHUP"
expect $? "stop, then start while the daemon still ends: exit 0, no rejected file, the new instance when the old has ended"
MOCK_STOP_LINGER=
rm -f "$STATE.linger" "$STATE.restart"

MOCK_INVALID=1
daemon running
rc restart
[ "$RC" != 0 ] && running && ! event "instance stopped" && logged "restart refused"
expect $? "restart, invalid config, running: refused before anything is stopped, exit non-zero"
MOCK_INVALID=

daemon running
rc stop
[ "$RC" = 0 ] && ! running && event "instance stopped"
expect $? "stop: the instance stopped, exit 0"

# --- triggers ------------------------------------------------------------------

config "$ENABLED"
daemon stopped
rc start
[ "$(cat "$FR/tmp/procd.triggers")" = "pathosd $FR/etc/init.d/pathosd" ]
expect $? "service_triggers: a config.change reload trigger on package pathosd"
grep -x "	procd_add_validation validate_pathosd_main" "$INIT" >/dev/null
expect $? "service_triggers: validate_pathosd_main published for LuCI (procd_add_validation)"

[ "$failures" = 0 ]
