#!/bin/sh
# The rpcd plugin files/pathosd-staged.rpcd (ubus object pathosd-staged),
# run by busybox ash as rpcd runs it (`list`; `call METHOD` with the call's
# JSON on standard input, ubus_rpc_session added by uhttpd), with the real
# pathosd ($1, else target/debug/pathosd) and a stand-in for the uci command
# (tests/packaging/shim/uci: CI cannot build OpenWrt's; it prints the staged
# configuration the test lays out, as `uci -P DIR export pathosd` does).
# Prints one "ok - NAME" / "not ok - NAME" per case.

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLUGIN=${PATHOSD_PLUGIN:-$ROOT/files/pathosd-staged.rpcd}
BIN=${1:-$ROOT/target/debug/pathosd}
SID=0123456789abcdef0123456789abcdef

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-staged-test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"

[ -x "$BIN" ] || { not_ok "pathosd binary $BIN exists (cargo build)"; exit 1; }
mkdir -p "$TMP/bin" "$TMP/rpcd/uci-$SID" "$TMP/uci"
ln -s "$BIN" "$TMP/bin/pathosd"
cp "$ROOT/tests/packaging/shim/uci" "$TMP/bin/uci"

# call METHOD INPUT: the plugin's answer; the uci calls go to $TMP/uci.log.
call() {
	: >"$TMP/uci.log"
	printf '%s' "$2" | env PATH="$TMP/bin:/usr/bin:/bin" PATHOSD_RPCD_SAVEDIR="$TMP/rpcd/uci-" \
		PATHOSD_UCI_SAVEDIR="$TMP/uci" STANDIN_UCI_EXPORT="$TMP/export" STANDIN_UCI_LOG="$TMP/uci.log" \
		busybox sh "$PLUGIN" call "$1" 2>"$TMP/stderr"
}
session() { printf '{"ubus_rpc_session":"%s"}' "${1-$SID}"; }
# json EXPR ANSWER: EXPR (Python, over the answer as `v`) printed.
json() { printf '%s' "$2" | python3 -c "import json, sys; v = json.load(sys.stdin); print($1)" 2>&1; }
same() { if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got:  $2" "want: $3"; fi; }

# The staged configuration as uci exports it, and a change for the session.
cat >"$TMP/export" <<'EOF'
package pathosd

config pathosd 'main'
	option enabled '1'
	option asn '65001'
	option router_id '192.0.2.1'
	option listen_port '-1'

config neighbor 'bird'
	option address '127.0.0.1'
	option peer_asn '65000'
	option passive '1'

config vip 'api'
	option name 'api-v2'
	option prefix '010.10.1.1/32'
	list community '65001:1'
	list community '65001:2'

config check
	option vip 'api'
	option type 'tcp'
	option port '80'
EOF
echo "pathosd.api.prefix='010.10.1.1/32'" >"$TMP/rpcd/uci-$SID/pathosd"

same "list: the methods validate and size" "$(busybox sh "$PLUGIN" list)" '{"validate":{},"size":{}}'

a=$(call validate "$(session)")
same "validate: the daemon's errors with section, option and the line of the file uci apply writes" \
	"$(json '[(e["section"], e.get("option"), e["line"]) for e in v["errors"]] + [v["valid"]]' "$a")" \
	"[(\"vip 'api'\", 'prefix', 15), (\"neighbor 'bird'\", 'passive', 11), False]"
same "validate: uci exports the session's changes (-P /var/run/rpcd/uci-SESSION)" \
	"$(cat "$TMP/uci.log")" "-P $TMP/rpcd/uci-$SID export pathosd"

sed -i -e "s/'010\./'10./" -e "/passive/d" "$TMP/export"
same "validate: a configuration the daemon takes" "$(call validate "$(session)")" '{"errors":[],"valid":true}'

rm "$TMP/rpcd/uci-$SID/pathosd"
same "validate: no pathosd change in the session: not staged, nothing run" \
	"$(call validate "$(session)") $(cat "$TMP/uci.log")" '{"staged":false} '
: >"$TMP/rpcd/uci-$SID/pathosd"
same "validate: an empty change file is no change (rpcd applies only files with content)" \
	"$(call validate "$(session)")" '{"staged":false}'
echo "pathosd.api.name='x'" >"$TMP/rpcd/uci-$SID/pathosd"

# The session id becomes part of a path: only rpcd's 32 hex digits.
for bad in "" "../../../etc/shadow" "0123456789ABCDEF0123456789ABCDEF" "${SID}0" "$SID/.." "0123456789abcdef0123456789abcde"; do
	a=$(call validate "$(session "$bad")")
	case "$(json 'v.get("error", "")' "$a") $(cat "$TMP/uci.log")" in
	"ubus_rpc_session is not a session id "|"no session: "*" ") ok "validate: session id '$bad' refused, nothing run" ;;
	*) not_ok "validate: session id '$bad' refused, nothing run" "got: $a" "uci: $(cat "$TMP/uci.log")" ;;
	esac
done
same "validate: no session at all (a call from the command line)" \
	"$(json 'v["error"]' "$(call validate '{}')")" "no session: this checks the changes a LuCI session staged (ubus_rpc_session)"
a=$(call validate "{\"x\":\"\\\"ubus_rpc_session\\\":\\\"$SID\\\"\",\"ubus_rpc_session\":\"$SID\"}")
same "validate: the session is the key uhttpd added, not text inside another value" "$(json 'v["valid"]' "$a")" "True"

echo "pathosd.main.asn='1'" >"$TMP/uci/pathosd"
a=$(call validate "$(session)")
same "validate: refused while the uci command has uncommitted pathosd changes (rpcd would apply without them)" \
	"$(json '"uci commit pathosd" in v["error"]' "$a") $(cat "$TMP/uci.log")" "True "
rm "$TMP/uci/pathosd"

a=$(STANDIN_UCI_FAIL='/etc/config/pathosd: Parse error (invalid command) at line 3, byte 1 "with \"quotes\" \\ "' call validate "$(session)")
same "validate: uci cannot read it: said, as valid JSON" "$(json 'v["error"]' "$a")" \
	'uci could not read the staged configuration: uci: /etc/config/pathosd: Parse error (invalid command) at line 3, byte 1 "with \"quotes\" \\ "'

rm "$TMP/bin/pathosd"
printf '#!/bin/sh\necho "usage: pathosd validate --config FILE" >&2\nexit 2\n' >"$TMP/bin/pathosd"
chmod +x "$TMP/bin/pathosd"
same "validate: a pathosd without --json: said, not an empty answer" \
	"$(json 'v["error"]' "$(call validate "$(session)")")" "pathosd validate gave no answer: usage: pathosd validate --config FILE"
rm "$TMP/bin/pathosd"
ln -s "$BIN" "$TMP/bin/pathosd"

a=$(call size "$(session)")
same "size: bytes and sections of the export; rpcd's reply estimated" \
	"$(json '(v["bytes"], v["sections"], v["uci_get"] > v["bytes"])' "$a")" "($(wc -c <"$TMP/export"), 4, True)"
same "size: no session refused" "$(json 'v["error"][:11]' "$(call size '{}')")" "no session:"
same "unknown method: said" "$(call frobnicate "$(session)")" '{"error":"unknown method frobnicate"}'
same "no temporary file is left in /tmp" "$(find /tmp -maxdepth 1 -name 'pathosd-staged.??????' -newer "$TMP/export" | wc -l)" "0"
[ "$failures" = 0 ]
