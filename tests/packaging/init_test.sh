#!/bin/sh
# Behaviour of files/pathosd.init with procd, uci_load_validate, logger and
# the pathosd binary mocked; run by busybox ash (the shell of OpenWrt) from
# scripts/test-packaging.sh. Prints one "ok - NAME" / "not ok - NAME" per case.
#
# The mocks record what the script asks procd for; the cases compare that
# with the exact expected instance (command, file, reload_signal...).

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
INIT=${PATHOSD_INIT:-$ROOT/files/pathosd.init}
SHIPPED="$ROOT/files/pathosd.config"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-init.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

RECORD="$TMP/procd.log"
LOGGER="$TMP/logger.log"
CALLS="$TMP/pathosd.calls"
UCI_FILE=
MOCK_RUNNING=1 # procd_running's exit status: 1 = not running

failures=0

ok() { echo "ok - $1"; }
not_ok() {
	echo "not ok - $1"
	shift
	for l in "$@"; do echo "#   $l"; done
	failures=$((failures + 1))
}

# --- mocks ---------------------------------------------------------------

# procd_open_instance takes an optional instance name; ours passes none.
# shellcheck disable=SC2120
procd_open_instance() { echo "open_instance${1:+ $1}" >>"$RECORD"; }
procd_close_instance() { echo "close_instance" >>"$RECORD"; }
procd_set_param() { echo "set_param $*" >>"$RECORD"; }
procd_add_reload_trigger() { echo "reload_trigger $*" >>"$RECORD"; }
procd_add_validation() { echo "validation $*" >>"$RECORD"; }
procd_running() { echo "running? $*" >>"$RECORD"; return "$MOCK_RUNNING"; }
logger() { echo "logger $*" >>"$LOGGER"; }

# uci_load_validate PACKAGE TYPE NAME FUNCTION SPEC...: reads the option
# values of `config TYPE 'NAME'` from $UCI_FILE (quoted or bare values, as
# libuci writes them), applies each SPEC's default, checks `bool`, and calls
# FUNCTION NAME RESULT like procd.sh does. A missing section gives defaults.
uci_load_validate() {
	_section_type=$2 _section_name=$3 _func=$4 _rc=0
	shift 4
	for _spec in "$@"; do
		_opt=${_spec%%:*}
		_rest=${_spec#*:}
		_type=${_rest%%:*}
		_def=${_rest#*:}
		[ "$_def" = "$_rest" ] && _def=
		_val=$(awk -v t="$_section_type" -v n="$_section_name" -v o="$_opt" '
			function unq(s) { gsub(/^["\047]|["\047]$/, "", s); return s }
			$1 == "config" { insec = ($2 == t && unq($3) == n); next }
			insec && $1 == "option" && $2 == o { v = unq($3); found = 1 }
			END { if (found) print v }' "$UCI_FILE")
		[ -n "$_val" ] || _val=$_def
		if [ "$_type" = bool ]; then
			case "$_val" in
				0|1|on|off|true|false|yes|no|enabled|disabled) ;;
				*) _rc=1 ;;
			esac
		fi
		eval "$_opt=\$_val"
	done
	"$_func" "$_section_name" "$_rc"
}

# A fake pathosd: records its arguments; `validate` fails with two error
# lines when $MOCK_INVALID is set, as the real one does (exit 1, stderr).
cat >"$TMP/pathosd" <<'EOF'
#!/bin/sh
echo "$*" >>"$CALLS"
if [ "$1" = validate ] && [ -n "$MOCK_INVALID" ]; then
	echo "pathosd: /etc/config/pathosd: invalid configuration (2 errors):" >&2
	echo "vip 'web' option prefix (line 3): not a prefix" >&2
	echo "config neighbor: at least one neighbor is required" >&2
	exit 1
fi
exit 0
EOF
chmod +x "$TMP/pathosd"
export CALLS

# The init script as rc.common sources it (its shebang line is a comment).
# shellcheck source=files/pathosd.init
. "$INIT"

if [ "$PROG" = /usr/sbin/pathosd ] && [ "$CONFIG" = /etc/config/pathosd ] &&
	[ "$START" = 80 ] && [ "$STOP" = 05 ] && [ "$USE_PROCD" = 1 ]; then
	ok "init: PROG, CONFIG, START=80, STOP=05, USE_PROCD=1"
else
	not_ok "init: PROG, CONFIG, START=80, STOP=05, USE_PROCD=1" \
		"PROG=$PROG CONFIG=$CONFIG START=$START STOP=$STOP USE_PROCD=$USE_PROCD"
fi

# Runs start_service against a UCI file; the records land in $RECORD etc.
start_with() {
	UCI_FILE=$1
	PROG="$TMP/pathosd"
	CONFIG=$UCI_FILE
	: >"$RECORD"
	: >"$LOGGER"
	: >"$CALLS"
	start_service 2>"$TMP/stderr"
	START_RC=$?
}

expected_instance() {
	cat <<EOF
open_instance
set_param command $TMP/pathosd run --config $1
set_param file $1
set_param reload_signal HUP
set_param respawn
set_param stdout 1
set_param stderr 1
set_param term_timeout 5
close_instance
EOF
}

uci() {
	f="$TMP/$1.uci"
	shift
	printf '%s\n' "$@" >"$f"
	echo "$f"
}

# --- cases ---------------------------------------------------------------

# The shipped config must be inert: the package's postinst runs `start`.
start_with "$SHIPPED"
if [ ! -s "$RECORD" ] && [ ! -s "$CALLS" ] && [ "$START_RC" = 0 ]; then
	ok "shipped config: nothing started, pathosd not even run"
else
	not_ok "shipped config: nothing started, pathosd not even run" \
		"rc=$START_RC" "procd: $(cat "$RECORD")" "pathosd: $(cat "$CALLS")"
fi

ENABLED=$(uci enabled "config pathosd 'main'" "	option enabled '1'" "	option asn '65001'")
start_with "$ENABLED"
if [ "$(cat "$RECORD")" = "$(expected_instance "$ENABLED")" ] && [ "$START_RC" = 0 ]; then
	ok "enabled, valid: one instance with command, file, reload_signal HUP, respawn, stdout, stderr, term_timeout 5"
else
	not_ok "enabled, valid: one instance with command, file, reload_signal HUP, respawn, stdout, stderr, term_timeout 5" \
		"rc=$START_RC" "got: $(cat "$RECORD")" "want: $(expected_instance "$ENABLED")"
fi
if [ "$(cat "$CALLS")" = "validate --config $ENABLED" ]; then
	ok "enabled, valid: pathosd validate --config FILE ran first"
else
	not_ok "enabled, valid: pathosd validate --config FILE ran first" "calls: $(cat "$CALLS")"
fi

DISABLED=$(uci disabled "config pathosd 'main'" "	option enabled '0'")
start_with "$DISABLED"
if [ ! -s "$RECORD" ] && [ ! -s "$CALLS" ]; then
	ok "enabled '0': nothing started"
else
	not_ok "enabled '0': nothing started" "procd: $(cat "$RECORD")"
fi

NOSWITCH=$(uci noswitch "config pathosd 'main'" "	option asn '65001'")
start_with "$NOSWITCH"
if [ ! -s "$RECORD" ]; then
	ok "no enabled option: disabled by default"
else
	not_ok "no enabled option: disabled by default" "procd: $(cat "$RECORD")"
fi

NOMAIN=$(uci nomain "config neighbor 'bird'" "	option enabled '1'")
start_with "$NOMAIN"
if [ ! -s "$RECORD" ]; then
	ok "no main section: nothing started"
else
	not_ok "no main section: nothing started" "procd: $(cat "$RECORD")"
fi

ON=$(uci on "config pathosd main" "	option enabled on")
start_with "$ON"
if [ "$(cat "$RECORD")" = "$(expected_instance "$ON")" ]; then
	ok "enabled on (bare words): started, as the daemon reads it"
else
	not_ok "enabled on (bare words): started, as the daemon reads it" "got: $(cat "$RECORD")"
fi

BOGUS=$(uci bogus "config pathosd 'main'" "	option enabled 'maybe'")
start_with "$BOGUS"
if [ ! -s "$RECORD" ] && [ "$START_RC" != 0 ] && grep -F "not starting" "$LOGGER" >/dev/null; then
	ok "enabled 'maybe': validation fails, nothing started, logged"
else
	not_ok "enabled 'maybe': validation fails, nothing started, logged" \
		"rc=$START_RC" "procd: $(cat "$RECORD")" "logger: $(cat "$LOGGER")"
fi

MOCK_INVALID=1
export MOCK_INVALID
MOCK_RUNNING=1
start_with "$ENABLED"
if [ "$START_RC" != 0 ] && ! grep -F open_instance "$RECORD" >/dev/null &&
	grep -F "daemon.err vip 'web' option prefix (line 3): not a prefix" "$LOGGER" >/dev/null &&
	grep -F "at least one neighbor is required" "$LOGGER" >/dev/null &&
	grep -F "daemon.err /etc/config/pathosd: invalid configuration (2 errors):" "$LOGGER" >/dev/null &&
	grep -F "invalid configuration; not starting" "$LOGGER" >/dev/null; then
	ok "invalid config, not running: not started, every error line in the log"
else
	not_ok "invalid config, not running: not started, every error line in the log" \
		"rc=$START_RC" "procd: $(cat "$RECORD")" "logger: $(cat "$LOGGER")"
fi

MOCK_RUNNING=0
start_with "$ENABLED"
got=$(grep -v '^running? ' "$RECORD")
if [ "$got" = "$(expected_instance "$ENABLED")" ] && grep -F "running? pathosd" "$RECORD" >/dev/null &&
	grep -F "keeps its previous one" "$LOGGER" >/dev/null; then
	ok "invalid config, running: same instance kept (procd sends HUP, daemon keeps old config)"
else
	not_ok "invalid config, running: same instance kept (procd sends HUP, daemon keeps old config)" \
		"procd: $(cat "$RECORD")" "logger: $(cat "$LOGGER")"
fi
MOCK_INVALID=
MOCK_RUNNING=1

: >"$RECORD"
service_triggers
if [ "$(cat "$RECORD")" = "reload_trigger pathosd
validation validate_pathosd_main" ]; then
	ok "service_triggers: reload trigger on config pathosd, validation published"
else
	not_ok "service_triggers: reload trigger on config pathosd, validation published" "got: $(cat "$RECORD")"
fi

[ "$failures" = 0 ]
