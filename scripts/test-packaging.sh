#!/usr/bin/env bash
# Tests of the OpenWrt packaging and the LuCI app that run on Debian (the
# real SDK build is manual, see docs/openwrt.md):
#   * shellcheck -s sh and busybox ash -n on the init script and test.sh
#   * the init script's behaviour with procd/uci mocked (tests/packaging/init_test.sh)
#   * the feed Makefiles against a stub build tree (tests/packaging/feed_test.sh)
#   * the rpcd plugin that checks LuCI's staged configuration with the real
#     pathosd (tests/packaging/staged_test.sh)
#   * the LuCI views in node:vm, as written and after jsmin, and the rpcd ACL
#     (tests/packaging/luci_views.test.cjs), their Save & Apply checked by
#     that plugin and the real pathosd
#   * the shipped config is disabled; with its example uncommented, the real
#     pathosd accepts it; test.sh accepts the real `pathosd --version`
#   * the BIRD peering recipe of docs/openwrt.md end to end with the real
#     pathosd and BIRD (tests/packaging/bird_recipe_test.sh)
# Every check prints "ok - NAME" or "not ok - NAME"; the last line is
# "N passed, N failed" and the exit status is 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

passed=0
failed=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-packaging.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# shellcheck source=scripts/tap.sh
. scripts/tap.sh

# Runs CMD, one check named NAME; its output is shown only on failure.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		not_ok "$name" "command: $*"
		printf '%s\n' "$out" | sed 's/^/#   /' | head -n 60
	fi
}

need() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || not_ok "$tool is installed (scripts/install-test-deps.sh)"
	done
}
need shellcheck busybox node make

# --- static checks of the shell code ---------------------------------------

# The init script as shellcheck sees it under rc.common: tests/packaging/shim
# (appended, so line numbers stay) uses START/STOP/USE_PROCD and sets what
# uci_load_validate sets. SC3043: `local` is fine in busybox ash, the only
# shell OpenWrt runs init scripts with (Debian's 0.9 has no shell=busybox).
{ echo '#!/bin/sh'; tail -n +2 files/pathosd.init; cat tests/packaging/shim/rc.common.sh; } >"$TMP/pathosd.init.sh"
check "shellcheck -s sh files/pathosd.init (with the rc.common shim)" \
	shellcheck -s sh -e SC3043 "$TMP/pathosd.init.sh"
check "busybox ash -n files/pathosd.init" busybox ash -n files/pathosd.init
check "shellcheck -s sh openwrt-feed/pathosd/test.sh" shellcheck -s sh openwrt-feed/pathosd/test.sh
check "shellcheck -s sh files/pathosd-staged.rpcd (the rpcd plugin) and the uci stand-in of its test" \
	shellcheck -s sh files/pathosd-staged.rpcd tests/packaging/shim/uci
check "busybox ash -n files/pathosd-staged.rpcd" busybox ash -n files/pathosd-staged.rpcd
rpcd_plugin_executable() { [ "$(head -n 1 files/pathosd-staged.rpcd)" = "#!/bin/sh" ] && [ -x files/pathosd-staged.rpcd ]; }
check "files/pathosd-staged.rpcd starts with #!/bin/sh and is executable (rpcd runs only those)" rpcd_plugin_executable
check "busybox ash -n openwrt-feed/pathosd/test.sh" busybox ash -n openwrt-feed/pathosd/test.sh
rc_common_shebang() {
	[ "$(head -n 1 files/pathosd.init)" = "#!/bin/sh /etc/rc.common" ] && [ -x files/pathosd.init ]
}
check "init script starts with #!/bin/sh /etc/rc.common and is executable" rc_common_shebang
# procd supervises a foreground process; `&` at a line end or a PID file would escape it.
no_daemonizing() {
	! grep -nE '(^|[^&])&[[:space:]]*$|pidfile|start-stop-daemon|nohup' files/pathosd.init
}
check "init script: no backgrounding, PID files or daemonizing" no_daemonizing
check "shellcheck tests/packaging/*.sh" shellcheck -s sh -e SC3043 -x tests/packaging/init_test.sh tests/packaging/feed_test.sh \
	tests/packaging/staged_test.sh
check "shellcheck scripts/test-packaging.sh scripts/cross-build.sh" \
	shellcheck -x scripts/test-packaging.sh scripts/cross-build.sh scripts/size-ceilings.sh
check "shellcheck the package builder, scripts/test-cross.sh and their tests" \
	shellcheck -x scripts/build-packages.sh scripts/test-cross.sh tests/packaging/ipk_test.sh \
	tests/packaging/apk_test.sh tests/packaging/qemu_bgp_smoke.sh
check "shellcheck -s sh tests/packaging/apk_functions.sh (the apk fake root's functions.sh)" \
	shellcheck -s sh -e SC3043 tests/packaging/apk_functions.sh
# The scripts that build and boot OpenWrt's real parts and run the flows on
# them (CI has no sources to run them with; docs/testing.md).
check "shellcheck scripts/openwrt-real/*.sh and luci/*.sh" shellcheck -x scripts/openwrt-real/*.sh scripts/openwrt-real/luci/*.sh
check "node --check scripts/openwrt-real/luci/flows.cjs (the real-client LuCI flows CI cannot run)" node --check scripts/openwrt-real/luci/flows.cjs
# The .apk writer and reader: Python's standard library only, so that they
# run on any machine with python3 (CI has no apk-tools).
py_stdlib_only() {
	python3 - scripts/apk-mkpkg.py tests/packaging/apk_read.py tests/packaging/fakeroot/jsonfilter <<'EOF'
import ast, sys
for path in sys.argv[1:]:
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) else []
        for n in names:
            if n.split(".")[0] not in sys.stdlib_module_names:
                sys.exit("%s imports %s, which is not in the standard library" % (path, n))
EOF
}
check "scripts/apk-mkpkg.py, tests/packaging/apk_read.py and the jsonfilter stand-in parse and import the standard library only" py_stdlib_only
check "shellcheck -s sh tests/packaging/fakeroot (functions.sh, rc.common, uci)" \
	shellcheck -s sh -e SC3043 tests/packaging/fakeroot/functions.sh tests/packaging/fakeroot/rc.common \
	tests/packaging/fakeroot/uci

# The size gate of scripts/cross-build.sh: a PATHOSD_SIZE_GATE it does not
# know is refused before any build (a typo must not turn the gate off), and
# every binary scripts/test-cross.sh builds has a ceiling, so none can grow
# unnoticed.
size_gate_refuses_unknown() {
	local out rc=0
	out=$(PATHOSD_SIZE_GATE=yes bash scripts/cross-build.sh mips-unknown-linux-musl 2>&1) || rc=$?
	[ "$rc" = 2 ] && [[ "$out" == *"PATHOSD_SIZE_GATE must be 0, 1 or ceiling, not 'yes'"* ]]
}
check "cross-build.sh refuses an unknown PATHOSD_SIZE_GATE" size_gate_refuses_unknown
ceilings_for_ci_builds() {
	local tc c
	# shellcheck source=scripts/size-ceilings.sh
	. scripts/size-ceilings.sh
	for tc in mips-unknown-linux-musl/default mips-unknown-linux-musl/nossl \
		armv7-unknown-linux-musleabihf/default aarch64-unknown-linux-musl/default \
		x86_64-unknown-linux-musl/default; do
		c=$(ceiling_of "${tc%/*}" "${tc#*/}")
		[[ "$c" =~ ^[1-9][0-9]*$ ]] || { echo "no ceiling for $tc: '$c'"; return 1; }
	done
}
check "every binary CI cross-builds has a size ceiling" ceilings_for_ci_builds

# --- the shipped configuration ---------------------------------------------

shipped_disabled() {
	awk '/^config pathosd .main./ { m = 1; next } /^config/ { m = 0 }
		m && /^[[:space:]]*option enabled .0.[[:space:]]*$/ { f = 1 } END { exit !f }' files/pathosd.config
}
check "files/pathosd.config: main has option enabled '0' (postinst starts the service)" shipped_disabled
shipped_no_sections() {
	! grep -nE '^config (neighbor|vip|check)' files/pathosd.config
}
check "files/pathosd.config: no uncommented neighbor, vip or check section" shipped_no_sections

# --- BIRD configuration in the docs ------------------------------------------

# Every ```bird block of the docs and every BIRD config in examples/ must
# parse with the real BIRD (Debian's 2.0.12; OpenWrt ships 2.18+, a superset
# for these statements). A block that is a fragment gets a router id.
# tests/packaging/bird_recipe_test.sh runs the peering ones against pathosd.
bird_blocks() {
	awk -v dir="$TMP" '
		FNR == 1 { doc = FILENAME; sub(/.*\//, "", doc); sub(/\.md$/, "", doc); n = 0 }
		/^```bird[[:space:]]*$/ { n++; total++; f = dir "/bird-" doc "-" n ".conf"; inb = 1; next }
		/^```/ && inb { inb = 0; close(f); next }
		inb { print > f }
		END { print total + 0 }' docs/*.md
}
if command -v bird >/dev/null; then
	n=$(bird_blocks)
	if ! ls "$TMP"/bird-openwrt-2.conf >/dev/null 2>&1; then
		not_ok "docs/openwrt.md has the two BIRD peering configs (found $n blocks in docs/)"
	fi
	for f in "$TMP"/bird-*-*.conf; do
		[ -e "$f" ] || continue
		name=${f#"$TMP"/bird-}
		name=${name%.conf}
		grep -q '^router id' "$f" || sed -i '1i router id 192.0.2.1;' "$f"
		check "docs/${name%-*}.md BIRD block ${name##*-} parses (bird -p)" bird -p -c "$f"
	done
	n_ex=0
	for f in examples/*bird*.conf; do
		[ -e "$f" ] || continue
		n_ex=$((n_ex + 1))
		check "$f parses (bird -p)" bird -p -c "$f"
	done
	[ "$n_ex" -gt 0 ] || not_ok "examples/ has the router's BIRD config (examples/openwrt-bird.conf)"
else
	not_ok "bird is installed (scripts/install-test-deps.sh)"
fi

# --- behaviour ---------------------------------------------------------------

run_suite "tests/packaging/init_test.sh" busybox ash tests/packaging/init_test.sh
run_suite "tests/packaging/feed_test.sh" sh tests/packaging/feed_test.sh

# --- against the real binary -----------------------------------------------

# PATHOSD_BIN=/path/to/pathosd tests another build instead of this tree's.
BIN=${PATHOSD_BIN:-}
if [ -n "$BIN" ]; then
	:
elif command -v cargo >/dev/null; then
	if out=$(cargo build --quiet --locked --bin pathosd 2>&1); then
		BIN=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
			sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/debug/pathosd
	else
		not_ok "cargo build --bin pathosd" "$out"
	fi
else
	not_ok "cargo is installed"
fi

if [ -n "$BIN" ] && [ -x "$BIN" ]; then
	mkdir -p "$TMP/bin"
	ln -sf "$BIN" "$TMP/bin/pathosd"
	version=$(sed -n 's/^PKG_VERSION:=//p' openwrt-feed/pathosd/Makefile)
	check "openwrt-feed/pathosd/test.sh accepts the real pathosd --version ($version)" \
		env PATH="$TMP/bin:$PATH" sh openwrt-feed/pathosd/test.sh pathosd "$version"

	# The commented example in the shipped config, uncommented and enabled,
	# must be a configuration the daemon accepts.
	sed -e 's/^#\(config \)/\1/' -e 's/^#\(\t\)/\1/' -e "s/option enabled '0'/option enabled '1'/" \
		files/pathosd.config >"$TMP/example.uci"
	"$BIN" validate --config "$TMP/example.uci" >"$TMP/validate.out" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		ok "pathosd validate accepts the shipped config's example"
	else
		not_ok "pathosd validate accepts the shipped config's example (exit $rc)"
		sed 's/^/#   /' "$TMP/validate.out"
	fi

	run_suite "tests/packaging/staged_test.sh" busybox ash tests/packaging/staged_test.sh "$BIN"
	# The views' Save & Apply is checked by the rpcd plugin with this pathosd.
	run_suite "tests/packaging/luci_views.test.cjs" env PATHOSD_BIN="$BIN" node tests/packaging/luci_views.test.cjs
	run_suite "tests/packaging/bird_recipe_test.sh" bash tests/packaging/bird_recipe_test.sh "$BIN"
else
	# No binary to test is a failure, never a pass by not running.
	not_ok "pathosd binary ${BIN:-(none built)} exists and is executable"
fi

# The harness itself: a missing binary fails it, and install-test-deps.sh
# stops only what it started. The inner run it makes sets
# PATHOSD_HARNESS_SELFTEST so it does not recurse.
if [ -z "${PATHOSD_HARNESS_SELFTEST:-}" ]; then
	check "shellcheck tests/packaging/harness_test.sh" shellcheck -x tests/packaging/harness_test.sh
	run_suite "tests/packaging/harness_test.sh" bash tests/packaging/harness_test.sh
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
