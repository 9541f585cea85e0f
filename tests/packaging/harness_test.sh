#!/usr/bin/env bash
# Tests of the test harness itself (run by scripts/test-packaging.sh):
#   * scripts/test-packaging.sh with PATHOSD_BIN=/nonexistent fails (exit
#     non-zero, a "not ok" naming the binary): a missing binary is never a
#     pass by not running;
#   * tests/packaging/bird_recipe_test.sh with a missing binary fails;
#   * scripts/install-test-deps.sh, run with apt, dpkg, the service managers
#     and pip stubbed, stops the distribution services through systemctl or
#     service and never kills processes by name (a bird or dnsmasq of
#     someone else on the machine must survive). pkill and killall are stubs
#     that only record the call, so even a regression kills nothing.
# Prints "ok - NAME" / "not ok - NAME"; exit 1 if anything failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-harness.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"

# --- a missing binary fails the packaging tests ------------------------------

# The inner run must not start this script again.
PATHOSD_HARNESS_SELFTEST=1 PATHOSD_BIN=/nonexistent timeout 600 bash "$ROOT/scripts/test-packaging.sh" >"$TMP/pkg.out" 2>&1
rc=$?
if [ "$rc" != 0 ] && grep -q '^not ok - pathosd binary /nonexistent' "$TMP/pkg.out" &&
	grep -Eq '^[0-9]+ passed, [1-9][0-9]* failed$' "$TMP/pkg.out"; then
	ok "test-packaging.sh with PATHOSD_BIN=/nonexistent fails (exit $rc)"
else
	not_ok "test-packaging.sh with PATHOSD_BIN=/nonexistent fails (exit $rc)" "$(tail -n 20 "$TMP/pkg.out")"
fi

timeout 60 bash "$ROOT/tests/packaging/bird_recipe_test.sh" /nonexistent >"$TMP/recipe.out" 2>&1
rc=$?
if [ "$rc" != 0 ] && grep -q '^not ok - pathosd binary /nonexistent' "$TMP/recipe.out" &&
	! grep -q '^ok - ' "$TMP/recipe.out"; then
	ok "bird_recipe_test.sh with a missing binary fails (exit $rc)"
else
	not_ok "bird_recipe_test.sh with a missing binary fails (exit $rc)" "$(cat "$TMP/recipe.out")"
fi

# --- install-test-deps.sh stops only what it should ---------------------------

STUB="$TMP/stub"
CALLS="$TMP/calls"
mkdir -p "$STUB"
: >"$CALLS"
stub() {
	local name=$1 body=$2
	printf '#!/bin/sh\necho "%s $*" >>"%s"\n%s\n' "$name" "$CALLS" "$body" >"$STUB/$name"
	chmod +x "$STUB/$name"
}
# Every package is installed; nothing may be installed or downloaded.
stub dpkg-query "echo 'install ok installed'"
stub apt-get "exit 1"
stub systemctl "exit 0"
stub service "exit 0"
stub python3 "exit 0"
stub pkill "exit 0"
stub killall "exit 0"
PATH="$STUB:$PATH" timeout 60 bash "$ROOT/scripts/install-test-deps.sh" >"$TMP/deps.out" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
	ok "install-test-deps.sh runs with everything installed"
else
	not_ok "install-test-deps.sh runs with everything installed (exit $rc)" "$(cat "$TMP/deps.out")" "$(cat "$CALLS")"
fi
if grep -Eq "^(pkill|killall) " "$CALLS"; then
	not_ok "install-test-deps.sh kills no process by name" "$(grep -E '^(pkill|killall) ' "$CALLS")"
else
	ok "install-test-deps.sh kills no process by name"
fi
for svc in bird dnsmasq; do
	if grep -q "^systemctl stop $svc\$" "$CALLS"; then
		ok "install-test-deps.sh stops the distribution's $svc through systemctl"
	else
		not_ok "install-test-deps.sh stops the distribution's $svc through systemctl" "$(cat "$CALLS")"
	fi
done
if grep -q '^apt-get ' "$CALLS"; then
	not_ok "install-test-deps.sh runs no apt-get when everything is installed" "$(cat "$CALLS")"
else
	ok "install-test-deps.sh runs no apt-get when everything is installed"
fi

# No script or packaging test ends processes by name.
if grep -nE '(^|[^[:alnum:]_-])(pkill|killall)([^[:alnum:]_-]|$)' "$ROOT"/scripts/*.sh "$ROOT"/tests/packaging/*.sh |
	grep -v '^[^:]*/tests/packaging/harness_test.sh:' >"$TMP/byname"; then
	not_ok "no pkill or killall in scripts/ and tests/packaging/" "$(cat "$TMP/byname")"
else
	ok "no pkill or killall in scripts/ and tests/packaging/"
fi

[ "$failures" = 0 ]
