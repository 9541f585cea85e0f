#!/usr/bin/env bash
# The .ipk packages of scripts/build-packages.sh, unpacked with tar alone and
# installed into a fake root (a chroot with busybox, OpenWrt's
# default_postinst/default_prerm and an rc.common whose procd is a log, see
# tests/packaging/fakeroot/):
#
#   tests/packaging/ipk_test.sh --ipk PKG.ipk --luci LUCI.ipk --bin BINARY [--runner QEMU]
#
# BINARY is the binary the package was built from; RUNNER (qemu-mips-static
# for a mips build) runs it on this machine, inside the fake root too, so
# the init script's `pathosd validate` is the packaged binary's own. Prints
# "ok - NAME" / "not ok - NAME"; exit status 1 if anything failed.
# ok and not_ok always succeed, so `test && ok || not_ok` is an if/else here;
# the fake root's rc.d names are plain.
# shellcheck disable=SC2015,SC2012
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
IPK='' LUCI='' BIN='' RUNNER=''
while [ "$#" -gt 0 ]; do
	case "$1" in
		--ipk) IPK=$2; shift 2 ;;
		--luci) LUCI=$2; shift 2 ;;
		--bin) BIN=$2; shift 2 ;;
		--runner) RUNNER=$2; shift 2 ;;
		*) echo "not ok - ipk_test.sh: unknown argument $1"; exit 1 ;;
	esac
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-ipk.XXXXXX") || exit 1
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
# shellcheck source=tests/packaging/tap.sh
. "$ROOT/tests/packaging/tap.sh"

for f in "$IPK" "$LUCI" "$BIN"; do
	if [ -z "$f" ] || [ ! -f "$f" ]; then
		not_ok "inputs exist (--ipk, --luci, --bin): missing ${f:-an argument}"
		exit 1
	fi
done
if [ -n "$RUNNER" ] && ! command -v "$RUNNER" >/dev/null; then
	not_ok "$RUNNER is installed (qemu-user-static)"
	exit 1
fi

version_out=$($RUNNER "$BIN" --version 2>&1)
bin_version=$(printf '%s\n' "$version_out" | sed -n 's/^pathosd //p' | head -n 1)
release=$(sed -n 's/^PKG_RELEASE:=//p' "$ROOT/openwrt-feed/pathosd/Makefile")
case "$version_out" in
	*"features: +tls"*) name=pathosd ;;
	*"features: -tls"*) name=pathosd-nossl ;;
	*) name=unknown ;;
esac
same "the binary names its variant (features line)" "$name" "$(basename "$IPK" | sed 's/_.*//')"

# --- unpacked with standard tools ----------------------------------------

# unpack IPK DIR: the outer tar.gz, then control and data.
unpack() {
	mkdir -p "$2/outer" "$2/control" "$2/data"
	tar -xzf "$1" -C "$2/outer" &&
		tar -xzf "$2/outer/control.tar.gz" -C "$2/control" &&
		tar -xzf "$2/outer/data.tar.gz" -C "$2/data"
}
P="$TMP/pkg"
if unpack "$IPK" "$P"; then ok "$(basename "$IPK") unpacks with tar -xz"; else not_ok "$(basename "$IPK") unpacks"; exit 1; fi
same "ipkg-build's outer layout: debian-binary, data.tar.gz, control.tar.gz" \
	"$(tar -tzf "$IPK" | tr '\n' ' ')" "./debian-binary ./data.tar.gz ./control.tar.gz "
same "debian-binary is 2.0" "$(cat "$P/outer/debian-binary")" "2.0"
same "every member owned by root (0/0)" \
	"$( { tar -tzvf "$IPK"; tar -tzvf "$P/outer/data.tar.gz"; tar -tzvf "$P/outer/control.tar.gz"; } | awk '$2 != "0/0"')" ""

tree=$(cd "$P/data" && find . -mindepth 1 -exec stat -c '%A %n' {} + | sort -k2)
same "file tree and modes" "$tree" "drwxr-xr-x ./etc
drwxr-xr-x ./etc/config
-rw------- ./etc/config/pathosd
drwxr-xr-x ./etc/hotplug.d
drwxr-xr-x ./etc/hotplug.d/pathosd
drwxr-xr-x ./etc/init.d
-rwxr-xr-x ./etc/init.d/pathosd
drwxr-xr-x ./usr
drwxr-xr-x ./usr/libexec
drwxr-xr-x ./usr/libexec/rpcd
-rwxr-xr-x ./usr/libexec/rpcd/pathosd-staged
drwxr-xr-x ./usr/sbin
-rwxr-xr-x ./usr/sbin/pathosd
drwxr-xr-x ./usr/share
drwxr-xr-x ./usr/share/acl.d
-rw-r--r-- ./usr/share/acl.d/pathosd.json"
cmp -s "$BIN" "$P/data/usr/sbin/pathosd" && ok "/usr/sbin/pathosd is the given binary" ||
	not_ok "/usr/sbin/pathosd is the given binary"
case "$(file -b "$P/data/usr/sbin/pathosd")" in
	*", stripped"*) ok "/usr/sbin/pathosd is stripped" ;;
	*) not_ok "/usr/sbin/pathosd is stripped" "$(file -b "$P/data/usr/sbin/pathosd")" ;;
esac
for pair in "etc/config/pathosd files/pathosd.config" "etc/init.d/pathosd files/pathosd.init" \
	"usr/share/acl.d/pathosd.json files/pathosd.acl.json" "usr/libexec/rpcd/pathosd-staged files/pathosd-staged.rpcd"; do
	# shellcheck disable=SC2086 # two words: the packaged path and the source
	set -- $pair
	cmp -s "$P/data/$1" "$ROOT/$2" && ok "/$1 is $2" || not_ok "/$1 is $2"
done

# --- control -------------------------------------------------------------

field() { sed -n "s/^$1: //p" "$P/control/control"; }
same "control: Package" "$(field Package)" "$name"
same "control: Version is pathosd --version's, -r PKG_RELEASE" "$(field Version)" "$bin_version-r$release"
same "file name is NAME_VERSION_ARCH.ipk" "$(basename "$IPK")" "${name}_$(field Version)_$(field Architecture).ipk"
same "control: Depends" "$(field Depends)" "libc"
same "control: Section" "$(field Section)" "net"
same "control: License" "$(field License)" "$(sed -n 's/^license *= *"\([^"]*\)".*/\1/p' "$ROOT/Cargo.toml")"
[ -n "$(field Maintainer)" ] && ok "control: Maintainer set" || not_ok "control: Maintainer set"
same "control: Installed-Size is the bytes of the files" "$(field Installed-Size)" \
	"$(find "$P/data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
if [ "$name" = pathosd-nossl ]; then
	same "pathosd-nossl provides pathosd (luci-app-pathosd's dependency)" "$(field Provides)" "pathosd"
	same "pathosd-nossl conflicts with pathosd" "$(field Conflicts)" "pathosd"
else
	# One side only, as the feed Makefile (Kconfig rejects mutual CONFLICTS).
	same "pathosd: no Provides/Conflicts" "$(field Provides)$(field Conflicts)" ""
fi
same "conffiles is exactly /etc/config/pathosd" "$(cat "$P/control/conffiles" 2>&1)" "/etc/config/pathosd"
same "control.tar.gz: control, conffiles, postinst, prerm with their modes" \
	"$(cd "$P/control" && find . -type f -exec stat -c '%a %n' {} + | sort -k2 | tr '\n' ' ')" \
	"644 ./conffiles 644 ./control 755 ./postinst 755 ./prerm "

# --- luci-app-pathosd ----------------------------------------------------

Lp="$TMP/luci"
if unpack "$LUCI" "$Lp"; then ok "$(basename "$LUCI") unpacks"; else not_ok "$(basename "$LUCI") unpacks"; fi
want_luci=$(cd "$ROOT/luci-app" && { find htdocs -type f | sed 's|^htdocs|./www|'; find root -type f | sed 's|^root|.|'; } | sort)
same "luci-app-pathosd: htdocs under /www, root under /" "$(cd "$Lp/data" && find . -type f | sort)" "$want_luci"
same "luci-app-pathosd: all files 0644" "$(cd "$Lp/data" && find . -type f ! -perm 0644)" ""
same "luci-app-pathosd: Depends on pathosd (either variant provides it)" \
	"$(sed -n 's/^Depends: //p' "$Lp/control/control")" "libc, luci-base, pathosd"
same "luci-app-pathosd: Architecture all" "$(sed -n 's/^Architecture: //p' "$Lp/control/control")" "all"
# luci.mk's postinst (postinst-pkg, run by default_postinst): rpcd reloads
# and so loads pathosd's exec plugin (/usr/libexec/rpcd/pathosd-staged).
same "luci-app-pathosd: control.tar.gz has luci.mk's postinst-pkg, which reloads rpcd" \
	"$(cd "$Lp/control" && find . -type f -exec stat -c '%a %n' {} + | sort -k2 | tr '\n' ' ') $(grep -c '^	/etc/init.d/rpcd reload 2>/dev/null$' "$Lp/control/postinst-pkg")" \
	"644 ./control 755 ./postinst 755 ./postinst-pkg 755 ./prerm  1"

# --- postinst / prerm in a fake root -------------------------------------

FR="$TMP/root"
mkdir -p "$FR/bin" "$FR/sbin" "$FR/lib" "$FR/etc/rc.d" "$FR/tmp" "$FR/usr/lib/opkg/info" "$FR/usr/bin"
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
cp "$ROOT/tests/packaging/fakeroot/functions.sh" "$FR/lib/functions.sh"
cp "$ROOT/tests/packaging/fakeroot/rc.common" "$FR/etc/rc.common"
cp "$ROOT/tests/packaging/fakeroot/uci" "$FR/sbin/uci"
[ -z "$RUNNER" ] || cp "$(command -v "$RUNNER")" "$FR/usr/bin/"

# What opkg does, with only the parts these packages use: unpack data (a
# modified conffile is kept and the new one goes beside it as FILE-opkg),
# write the file list, run the scripts with PKG_UPGRADE on an upgrade.
opkg_install() { # IPK UPGRADE(0|1)
	local x="$TMP/inst.$RANDOM" f
	unpack "$1" "$x" || return 1
	if [ "$2" = 1 ]; then
		PKG_UPGRADE=1 chroot "$FR" /bin/sh "/usr/lib/opkg/info/$name.prerm" upgrade >>"$TMP/scripts.out" 2>&1 || return 1
	fi
	while read -r f; do
		if [ -f "$FR$f" ] && [ "$(md5sum <"$FR$f")" != "$(cat "$FR/usr/lib/opkg/info/$name.md5$(echo "$f" | tr / _)" 2>/dev/null)" ]; then
			cp "$x/data$f" "$FR$f-opkg"
			rm "$x/data$f"
		fi
	done <"$x/control/conffiles"
	cp -a "$x/data/." "$FR/"
	(cd "$x/data" && find . -type f | sed 's|^\.||') >"$FR/usr/lib/opkg/info/$name.list"
	for f in postinst prerm conffiles control; do cp "$x/control/$f" "$FR/usr/lib/opkg/info/$name.$f"; done
	while read -r f; do
		[ -e "$FR$f-opkg" ] || md5sum <"$FR$f" >"$FR/usr/lib/opkg/info/$name.md5$(echo "$f" | tr / _)"
	done <"$x/control/conffiles"
	if [ -n "$RUNNER" ]; then
		# The packaged binary, run by qemu-user inside the fake root.
		mv "$FR/usr/sbin/pathosd" "$FR/usr/sbin/pathosd.bin"
		printf '#!/bin/sh\nexec /usr/bin/%s /usr/sbin/pathosd.bin "$@"\n' "$RUNNER" >"$FR/usr/sbin/pathosd"
		chmod 0755 "$FR/usr/sbin/pathosd"
	fi
	local up=
	[ "$2" = 1 ] && up=1
	PKG_UPGRADE=$up chroot "$FR" /bin/sh "/usr/lib/opkg/info/$name.postinst" configure >>"$TMP/scripts.out" 2>&1
}
links() { (cd "$FR/etc/rc.d" && ls | tr '\n' ' '); }
procd() { cat "$FR/tmp/procd.log" 2>/dev/null; }

if opkg_install "$IPK" 0; then ok "fresh install: postinst exits 0"; else not_ok "fresh install: postinst exits 0" "$(cat "$TMP/scripts.out")"; fi
same "fresh install: boot links S80/K05 (default_postinst enables)" "$(links)" "K05pathosd S80pathosd "
same "fresh install: started, but the shipped config (enabled '0') opens no procd instance" "$(procd)" "start pathosd"

# The user enables pathosd: a loopback session and an always-up VIP.
cp "$ROOT/tests/packaging/fixtures/enabled.config" "$FR/etc/config/pathosd"
cp "$FR/etc/config/pathosd" "$TMP/user.config"
: >"$FR/tmp/procd.log"
if opkg_install "$IPK" 1; then ok "upgrade: prerm and postinst exit 0"; else not_ok "upgrade: prerm and postinst exit 0" "$(cat "$TMP/scripts.out")"; fi
cmp -s "$TMP/user.config" "$FR/etc/config/pathosd" && ok "upgrade: the modified conffile is kept" ||
	not_ok "upgrade: the modified conffile is kept" "$(cat "$FR/etc/config/pathosd")"
cmp -s "$ROOT/files/pathosd.config" "$FR/etc/config/pathosd-opkg" && ok "upgrade: the new default lands beside it as pathosd-opkg" ||
	not_ok "upgrade: the new default lands beside it as pathosd-opkg"
same "upgrade: boot links kept" "$(links)" "K05pathosd S80pathosd "
same "upgrade: stopped, then started with the kept config (enabled '1'): one instance of the packaged binary" \
	"$(procd)" "stop pathosd
start pathosd
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
if chroot "$FR" /bin/sh "/usr/lib/opkg/info/$name.prerm" remove >>"$TMP/scripts.out" 2>&1; then ok "remove: prerm exits 0"; else not_ok "remove: prerm exits 0"; fi
same "remove: stopped" "$(procd)" "stop pathosd"
same "remove: boot links gone (default_prerm disables)" "$(links)" ""

# Building a firmware image: IPKG_INSTROOT set, the scripts run on the host.
: >"$FR/tmp/procd.log"
if IPKG_INSTROOT="$FR" sh "$FR/usr/lib/opkg/info/$name.postinst" >>"$TMP/scripts.out" 2>&1; then
	ok "image build (IPKG_INSTROOT): postinst exits 0"
else
	not_ok "image build (IPKG_INSTROOT): postinst exits 0" "$(cat "$TMP/scripts.out")"
fi
same "image build: boot links only, nothing started" "$(links)|$(procd)" "K05pathosd S80pathosd |"

[ "$failures" = 0 ]
