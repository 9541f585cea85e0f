#!/usr/bin/env bash
# The .apk packages of scripts/build-packages.sh (OpenWrt 25.12, apk-tools
# v3), read with the project's own reader (tests/packaging/apk_read.py: no
# apk-tools here, Debian 12 has none) and installed into a fake root:
#
#   tests/packaging/apk_test.sh --apk PKG.apk --luci LUCI.apk --bin BINARY --arch ARCH [--runner QEMU]
#
# BINARY is the binary the package was built from, ARCH the OpenWrt package
# architecture it was built for; RUNNER (qemu-mips-static for a mips build)
# runs it on this machine, inside the fake root too. Checked:
#   * the container and its hashes (apk_read.py: block layout, schema, every
#     file's sha256 against its data, installed-size, the unique id);
#   * the metadata and scripts against tests/packaging/fixtures/apk/*.json,
#     the golden layout of what OpenWrt's package-pack.mk makes;
#   * the files: the given binary, files/, luci-app/, and the lists
#     lib/apk/packages/NAME.{list,conffiles,conffiles_static};
#   * that the reader rejects a package with a changed byte;
#   * the scripts in a chroot fake root with busybox, the apk-era
#     default_postinst/default_prerm (tests/packaging/apk_functions.sh) and
#     the procd log of tests/packaging/fakeroot/rc.common, run the way apk
#     runs them (from a file whose name says nothing of the package, the
#     package's files in place first), including an upgrade over a modified
#     /etc/config/pathosd, which apk keeps (the new one goes beside it as
#     pathosd.apk-new).
# Prints "ok - NAME" / "not ok - NAME"; exit status 1 if anything failed.
# SOURCE_DATE_EPOCH (else the last commit's time) is the files' mtime, as
# build-packages.sh sets it.
# ok and not_ok always succeed, so `test && ok || not_ok` is an if/else here;
# the fake root's rc.d names are plain.
# shellcheck disable=SC2015,SC2012
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
APK='' LUCI='' BIN='' ARCH='' RUNNER=''
while [ "$#" -gt 0 ]; do
	case "$1" in
		--apk) APK=$2; shift 2 ;;
		--luci) LUCI=$2; shift 2 ;;
		--bin) BIN=$2; shift 2 ;;
		--arch) ARCH=$2; shift 2 ;;
		--runner) RUNNER=$2; shift 2 ;;
		*) echo "not ok - apk_test.sh: unknown argument $1"; exit 1 ;;
	esac
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-apk.XXXXXX") || exit 1
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"
READ=(python3 "$ROOT/tests/packaging/apk_read.py")

for f in "$APK" "$LUCI" "$BIN"; do
	if [ -z "$f" ] || [ ! -f "$f" ]; then
		not_ok "inputs exist (--apk, --luci, --bin): missing ${f:-an argument}"
		exit 1
	fi
done
[ -n "$ARCH" ] || { not_ok "--arch given"; exit 1; }
for tool in python3 sha256sum; do
	command -v "$tool" >/dev/null || { not_ok "$tool is installed (scripts/install-test-deps.sh)"; exit 1; }
done
if [ -n "$RUNNER" ] && ! command -v "$RUNNER" >/dev/null; then
	not_ok "$RUNNER is installed (qemu-user-static)"
	exit 1
fi

version_out=$($RUNNER "$BIN" --version 2>&1)
bin_version=$(printf '%s\n' "$version_out" | sed -n 's/^pathosd //p' | head -n 1)
release=$(sed -n 's/^PKG_RELEASE:=//p' "$ROOT/openwrt-feed/pathosd/Makefile")
version="$bin_version-r$release"
case "$version_out" in
	*"features: +tls"*) name=pathosd ;;
	*"features: -tls"*) name=pathosd-nossl ;;
	*) name=unknown ;;
esac
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}

# --- the packages, read ------------------------------------------------------

same "file name is ARCH/NAME-VERSION.apk (package-pack.mk's, one directory per architecture)" \
	"$(basename "$(dirname "$APK")")/$(basename "$APK")" "$ARCH/$name-$version.apk"
same "luci-app-pathosd beside it as luci-app-pathosd-VERSION.apk" \
	"$(basename "$(dirname "$LUCI")")/$(basename "$LUCI")" "$ARCH/luci-app-pathosd-$version.apk"
for pkg in "$APK" "$LUCI"; do
	if out=$("${READ[@]}" "$pkg" 2>&1 >/dev/null); then
		ok "$(basename "$pkg"): container, tree, sizes and sha256 check out (apk_read.py)"
	else
		not_ok "$(basename "$pkg"): container, tree, sizes and sha256 check out (apk_read.py)" "$out"
		exit 1
	fi
	same "$(basename "$pkg"): deflate-compressed, unsigned (as OpenWrt's apk mkpkg call leaves it)" \
		"$("${READ[@]}" "$pkg" --meta | sed 's/, "bytes": [0-9]*//')" '{"compression": "deflate", "signed": false}'
done

# Metadata and scripts: the golden layout.
if out=$("${READ[@]}" "$APK" --golden "$ROOT/tests/packaging/fixtures/apk/$name.json" \
	--set "VERSION=$version" --set "ARCH=$ARCH" --set "EPOCH=$epoch" 2>&1); then
	ok "$name: info, paths, modes, owners and scripts as fixtures/apk/$name.json"
else
	not_ok "$name: info, paths, modes, owners and scripts as fixtures/apk/$name.json" "$out"
fi

# LuCI: its tree is luci-app/'s (htdocs under /www, root under /, files
# 0644), plus its file list; the rest is golden.
S="$TMP/luci-stage"
mkdir -p "$S/www" "$S/lib/apk/packages"
cp -R "$ROOT/luci-app/htdocs/." "$S/www/"
cp -R "$ROOT/luci-app/root/." "$S/"
: >"$S/lib/apk/packages/luci-app-pathosd.list"
find "$S" -type d -exec chmod 0755 {} +
find "$S" -type f -exec chmod 0644 {} +
if out=$("${READ[@]}" "$LUCI" --golden "$ROOT/tests/packaging/fixtures/apk/luci-app-pathosd.json" \
	--set "VERSION=$version" --set "EPOCH=$epoch" --set "PATHS=$("${READ[@]}" --tree "$S")" 2>&1); then
	ok "luci-app-pathosd: info, scripts and the tree of luci-app/ as fixtures/apk/luci-app-pathosd.json"
else
	not_ok "luci-app-pathosd: info, scripts and the tree of luci-app/ as fixtures/apk/luci-app-pathosd.json" "$out"
fi

# --- the files ---------------------------------------------------------------

P="$TMP/pkg"
if "${READ[@]}" "$APK" --extract "$P" 2>"$TMP/err"; then ok "$name: files extract"; else not_ok "$name: files extract" "$(cat "$TMP/err")"; exit 1; fi
cmp -s "$BIN" "$P/usr/sbin/pathosd" && ok "/usr/sbin/pathosd is the given binary" ||
	not_ok "/usr/sbin/pathosd is the given binary"
for pair in "etc/config/pathosd files/pathosd.config" "etc/init.d/pathosd files/pathosd.init" \
	"usr/share/acl.d/pathosd.json files/pathosd.acl.json" "usr/libexec/rpcd/pathosd-staged files/pathosd-staged.rpcd"; do
	# shellcheck disable=SC2086 # two words: the packaged path and the source
	set -- $pair
	cmp -s "$P/$1" "$ROOT/$2" && ok "/$1 is $2" || not_ok "/$1 is $2"
done
same "lib/apk/packages/$name.list: every file of the package but the lists, sorted (what default_postinst reads)" \
	"$(cat "$P/lib/apk/packages/$name.list")" \
	"$(cd "$P" && find . -type f ! -path './lib/apk/packages/*' | sed 's|^\.||' | LC_ALL=C sort)"
same "lib/apk/packages/$name.conffiles is exactly /etc/config/pathosd" \
	"$(cat "$P/lib/apk/packages/$name.conffiles")" "/etc/config/pathosd"
same "lib/apk/packages/$name.conffiles_static: the conffile and its sha256 (sysupgrade's check for changes)" \
	"$(cat "$P/lib/apk/packages/$name.conffiles_static")" \
	"/etc/config/pathosd $(sha256sum <"$ROOT/files/pathosd.config" | cut -d' ' -f1)"

Lp="$TMP/luci"
if "${READ[@]}" "$LUCI" --extract "$Lp" 2>"$TMP/err"; then ok "luci-app-pathosd: files extract"; else not_ok "luci-app-pathosd: files extract" "$(cat "$TMP/err")"; fi
same "luci-app-pathosd: the files are luci-app/'s" \
	"$(cd "$Lp" && find . -type f ! -path './lib/apk/*' -exec sha256sum {} + | LC_ALL=C sort -k2)" \
	"$(cd "$S" && find . -type f ! -path './lib/apk/*' -exec sha256sum {} + | LC_ALL=C sort -k2)"
same "luci-app-pathosd: lib/apk/packages/luci-app-pathosd.list lists them" \
	"$(cat "$Lp/lib/apk/packages/luci-app-pathosd.list")" \
	"$(cd "$Lp" && find . -type f ! -path './lib/apk/*' | sed 's|^\.||' | LC_ALL=C sort)"

# --- the reader refuses a damaged package ----------------------------------

# Uncompressed ("ADB." as the file's own magic), one byte of the binary's
# data changed: its sha256 no longer matches. Then one byte of the ADB
# block: the unique id no longer matches.
python3 - "$APK" "$TMP/bad-data.apk" "$TMP/bad-adb.apk" <<'EOF'
import sys, zlib
raw = open(sys.argv[1], "rb").read()
s = bytearray(zlib.decompress(raw[4:], -15))
d = bytearray(s)
d[len(d) // 2] ^= 0x01
open(sys.argv[2], "wb").write(bytes(d))
a = bytearray(s)
i = a.index(b"Apache-2.0")
a[i] ^= 0x20
open(sys.argv[3], "wb").write(bytes(a))
EOF
out=$("${READ[@]}" "$TMP/bad-data.apk" 2>&1) && not_ok "the reader refuses a changed byte of file data" "it accepted it" ||
	{ [[ "$out" == *"does not match its sha256"* ]] && ok "the reader refuses a changed byte of file data ($out)" ||
		not_ok "the reader refuses a changed byte of file data for the right reason" "$out"; }
out=$("${READ[@]}" "$TMP/bad-adb.apk" 2>&1) && not_ok "the reader refuses a changed byte of metadata" "it accepted it" ||
	{ [[ "$out" == *"unique id"* ]] && ok "the reader refuses a changed byte of metadata ($out)" ||
		not_ok "the reader refuses a changed byte of metadata for the right reason" "$out"; }

# --- the scripts, in a fake root -------------------------------------------

FR="$TMP/root"
mkdir -p "$FR/bin" "$FR/sbin" "$FR/lib" "$FR/etc/rc.d" "$FR/tmp" "$FR/usr/bin" "$FR/lib/apk/db"
cp /bin/busybox "$FR/bin/busybox"
# busybox's shared libraries (Debian's busybox is dynamic), at their paths.
for lib in $(ldd /bin/busybox 2>/dev/null | grep -o '/[^ ]*'); do
	mkdir -p "$FR$(dirname "$lib")"
	cp -L "$lib" "$FR$lib"
done
if ! chroot "$FR" /bin/busybox --install -s /bin 2>"$TMP/chroot.err"; then
	not_ok "a chroot with busybox runs (as root)" "$(cat "$TMP/chroot.err")"
	echo "# $failures failed"
	exit 1
fi
cp "$ROOT/tests/packaging/apk_functions.sh" "$FR/lib/functions.sh"
cp "$ROOT/tests/packaging/fakeroot/rc.common" "$FR/etc/rc.common"
cp "$ROOT/tests/packaging/fakeroot/uci" "$FR/sbin/uci"
[ -z "$RUNNER" ] || cp "$(command -v "$RUNNER")" "$FR/usr/bin/"

# script PKG.apk TYPE: runs the package's script as apk does: from a file
# whose name says nothing of the package ($0 is /proc/self/fd/N under apk),
# in the root, with a clean environment plus APK_SCRIPT and APK_PACKAGE.
script() {
	local f="/tmp/.script.$RANDOM"
	"${READ[@]}" "$1" | python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["scripts"][sys.argv[1]])' "$2" >"$FR$f"
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin APK_SCRIPT="$2" APK_PACKAGE="$3" \
		chroot "$FR" /bin/sh "$f" >>"$TMP/scripts.out" 2>&1
	local rc=$?
	rm -f "$FR$f"
	return $rc
}

# What apk does with the files, with only the parts these packages use:
# on an upgrade, a file under /etc (but /etc/init.d) that differs from
# what the installed package put there is kept, and the new one goes
# beside it as FILE.apk-new (unless the two are the same); everything else
# is replaced. The database here: the sha256 of each file installed.
apk_files() { # PKG.apk NAME
	local x="$TMP/inst.$RANDOM" f db="$FR/lib/apk/db/$2"
	"${READ[@]}" "$1" --extract "$x" || return 1
	while read -r f; do
		case "$f" in /etc/init.d/*) continue ;; /etc/*) ;; *) continue ;; esac
		[ -f "$FR$f" ] || continue
		if [ "$(h "$FR$f")" != "$(awk -v f="$f" '$2 == f { print $1 }' "$db" 2>/dev/null)" ]; then
			cmp -s "$FR$f" "$x$f" || cp "$x$f" "$FR$f.apk-new"
			rm "$x$f"
		fi
	done <"$x/lib/apk/packages/$2.list"
	cp -a "$x/." "$FR/"
	(cd "$x" && find . -type f | sed 's|^\.||' | while read -r f; do
		echo "$(h "$FR$f") $f"
	done) >"$db"
	if [ -n "$RUNNER" ] && [ -f "$x/usr/sbin/pathosd" ]; then
		# The packaged binary, run by qemu-user inside the fake root.
		mv "$FR/usr/sbin/pathosd" "$FR/usr/sbin/pathosd.bin"
		printf '#!/bin/sh\nexec /usr/bin/%s /usr/sbin/pathosd.bin "$@"\n' "$RUNNER" >"$FR/usr/sbin/pathosd"
		chmod 0755 "$FR/usr/sbin/pathosd"
	fi
}
h() { sha256sum <"$1" | cut -d' ' -f1; }
links() { (cd "$FR/etc/rc.d" && ls | tr '\n' ' '); }
procd() { cat "$FR/tmp/procd.log" 2>/dev/null; }

apk_files "$APK" "$name" && script "$APK" post-install "$name" &&
	ok "fresh install: post-install exits 0" || not_ok "fresh install: post-install exits 0" "$(cat "$TMP/scripts.out")"
same "fresh install: boot links S80/K05 (default_postinst found the init script through $name.list)" "$(links)" "K05pathosd S80pathosd "
same "fresh install: started, but the shipped config (enabled '0') opens no procd instance" "$(procd)" "start pathosd"

# LuCI's scripts have no init script to act on; they must still succeed.
apk_files "$LUCI" luci-app-pathosd && script "$LUCI" post-install luci-app-pathosd &&
	ok "luci-app-pathosd: post-install exits 0" || not_ok "luci-app-pathosd: post-install exits 0" "$(cat "$TMP/scripts.out")"

# The user enables pathosd: a loopback session and an always-up VIP.
cp "$ROOT/tests/packaging/fixtures/enabled.config" "$FR/etc/config/pathosd"
cp "$FR/etc/config/pathosd" "$TMP/user.config"
: >"$FR/tmp/procd.log"
# apk upgrades without the old package's pre-deinstall: new files, then
# post-upgrade (PKG_UPGRADE=1).
apk_files "$APK" "$name" && script "$APK" post-upgrade "$name" &&
	ok "upgrade: post-upgrade exits 0" || not_ok "upgrade: post-upgrade exits 0" "$(cat "$TMP/scripts.out")"
cmp -s "$TMP/user.config" "$FR/etc/config/pathosd" && ok "upgrade: the modified /etc/config/pathosd is kept" ||
	not_ok "upgrade: the modified /etc/config/pathosd is kept" "$(cat "$FR/etc/config/pathosd")"
cmp -s "$ROOT/files/pathosd.config" "$FR/etc/config/pathosd.apk-new" && ok "upgrade: the new default lands beside it as pathosd.apk-new" ||
	not_ok "upgrade: the new default lands beside it as pathosd.apk-new"
same "upgrade: boot links kept" "$(links)" "K05pathosd S80pathosd "
same "upgrade: started with the kept config (enabled '1'): one instance of the packaged binary, after its validate passed" \
	"$(procd)" "start pathosd
open_instance instance1
set_param command /usr/sbin/pathosd run --config /etc/config/pathosd
set_param watchdog 1 30
set_param env PATHOSD_PROCD_WATCHDOG=pathosd instance1 30
set_param respawn
set_param stdout 1
set_param stderr 1
set_param term_timeout 5
close_instance"

: >"$FR/tmp/procd.log"
script "$LUCI" pre-deinstall luci-app-pathosd && ok "luci-app-pathosd: pre-deinstall exits 0" ||
	not_ok "luci-app-pathosd: pre-deinstall exits 0" "$(cat "$TMP/scripts.out")"
script "$APK" pre-deinstall "$name" && ok "remove: pre-deinstall exits 0" ||
	not_ok "remove: pre-deinstall exits 0" "$(cat "$TMP/scripts.out")"
same "remove: stopped" "$(procd)" "stop pathosd"
same "remove: boot links gone (default_prerm disables)" "$(links)" ""

# Building a firmware image: IPKG_INSTROOT set, the script run on the host.
: >"$FR/tmp/procd.log"
"${READ[@]}" "$APK" | python3 -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["scripts"]["post-install"])' >"$TMP/post-install"
if IPKG_INSTROOT="$FR" sh "$TMP/post-install" >>"$TMP/scripts.out" 2>&1; then
	ok "image build (IPKG_INSTROOT): post-install exits 0"
else
	not_ok "image build (IPKG_INSTROOT): post-install exits 0" "$(cat "$TMP/scripts.out")"
fi
same "image build: boot links only, nothing started" "$(links)|$(procd)" "K05pathosd S80pathosd |"

[ "$failures" = 0 ]
