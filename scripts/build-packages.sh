#!/usr/bin/env bash
# Builds installable OpenWrt packages without the SDK, from a cross-built
# pathosd binary (scripts/cross-build.sh), files/ and luci-app/:
#
#   pathosd_VERSION-rRELEASE_ARCH.ipk        (binary with TLS), or
#   pathosd-nossl_VERSION-rRELEASE_ARCH.ipk  (binary built --no-default-features)
#   luci-app-pathosd_VERSION-rRELEASE_all.ipk
#
#   scripts/build-packages.sh --bin FILE --arch ARCH [--runner QEMU] [--out DIR]
#
# ARCH is OpenWrt's package architecture (mips_24kc, mipsel_24kc,
# arm_cortex-a7_neon-vfpv4, aarch64_generic, x86_64...). RUNNER runs the binary
# (qemu-mips-static for a mips build); the binary's own `--version` decides
# the package: its first line must be "pathosd PKG_VERSION" and its
# "features:" line names the variant, so a package can never carry the other
# variant's binary.
#
# The .ipk layout is OpenWrt's scripts/ipkg-build: a gzipped tar of
# ./debian-binary, ./data.tar.gz and ./control.tar.gz, every file owned by
# root, with the control fields, conffiles and the postinst/prerm that
# OpenWrt's package-pack.mk generates (they call default_postinst and
# default_prerm from /lib/functions.sh). Only .ipk (opkg, OpenWrt 24.10):
# apk-tools v3 (`apk mkpkg`), which writes OpenWrt 25.12's .apk, is not in
# Debian 12, the only package source here (docs/openwrt.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BIN='' ARCH='' RUNNER='' OUT="$ROOT/target/packages"
while [ "$#" -gt 0 ]; do
	case "$1" in
		--bin) BIN=$2; shift 2 ;;
		--arch) ARCH=$2; shift 2 ;;
		--runner) RUNNER=$2; shift 2 ;;
		--out) OUT=$2; shift 2 ;;
		*) echo "build-packages: unknown argument $1" >&2; exit 2 ;;
	esac
done
die() { echo "build-packages: $*" >&2; exit 1; }
if [ -z "$BIN" ] || [ -z "$ARCH" ]; then
	echo "usage: $0 --bin FILE --arch ARCH [--runner QEMU] [--out DIR]" >&2
	exit 2
fi
[ -f "$BIN" ] || die "no binary at $BIN"
case "$ARCH" in *[!a-z0-9_-]* | "") die "bad architecture name $ARCH" ;; esac

mk() { sed -n "s/^$1:=//p" openwrt-feed/pathosd/Makefile | head -n 1; }
VERSION=$(mk PKG_VERSION)
RELEASE=$(mk PKG_RELEASE)
LICENSE=$(mk PKG_LICENSE)
LICENSE_FILES=$(mk PKG_LICENSE_FILES)
MAINTAINER=$(mk PKG_MAINTAINER)
if [ -z "$VERSION" ] || [ -z "$RELEASE" ]; then
	die "PKG_VERSION/PKG_RELEASE not found in openwrt-feed/pathosd/Makefile"
fi

# The binary says what it is.
version_out=$($RUNNER "$BIN" --version 2>&1) || die "$BIN --version failed: $version_out"
first=$(printf '%s\n' "$version_out" | sed -n 1p)
[ "$first" = "pathosd $VERSION" ] || die "$BIN --version says \"$first\", the feed's PKG_VERSION is $VERSION"
case "$(printf '%s\n' "$version_out" | sed -n 's/^features: //p')" in
	*+tls*) NAME=pathosd ;;
	*-tls*) NAME=pathosd-nossl ;;
	*) die "$BIN --version has no features line: $version_out" ;;
esac

# Reproducible: every timestamp is the last commit's (or 0 outside git).
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
TAR=(tar --format=gnu --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-pkg.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

# OpenWrt's package-pack.mk scripts: default_postinst enables (unless
# upgrading) and starts each init script of the package, default_prerm stops
# it and disables it (unless upgrading); IPKG_INSTROOT is set while an image
# is built. The shipped config has `option enabled '0'`, so the start does
# nothing until the user enables pathosd. Expanded on the router, not here:
# shellcheck disable=SC2016
POSTINST='#!/bin/sh
[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_postinst $0 $@'
# shellcheck disable=SC2016
PRERM='#!/bin/sh
[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0
. ${IPKG_INSTROOT}/lib/functions.sh
default_prerm $0 $@'

# ipk NAME ARCH DATA_DIR CONTROL_TEXT [CONFFILES]: writes NAME_V-rR_ARCH.ipk.
ipk() {
	local name=$1 arch=$2 data=$3 control=$4 conffiles=${5:-}
	local dir="$WORK/$name" size
	rm -rf "$dir"
	mkdir -p "$dir/control"
	# Installed-Size: bytes of the files, as ipkg-build counts them.
	size=$(find "$data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	{
		printf '%s\n' "$control"
		echo "Installed-Size: $size"
	} >"$dir/control/control"
	[ -z "$conffiles" ] || printf '%s\n' "$conffiles" >"$dir/control/conffiles"
	printf '%s\n' "$POSTINST" >"$dir/control/postinst"
	printf '%s\n' "$PRERM" >"$dir/control/prerm"
	chmod 0644 "$dir/control/control"
	[ -z "$conffiles" ] || chmod 0644 "$dir/control/conffiles"
	chmod 0755 "$dir/control/postinst" "$dir/control/prerm"
	echo "2.0" >"$dir/debian-binary"
	"${TAR[@]}" -C "$data" -cf - . | gzip -9n >"$dir/data.tar.gz"
	"${TAR[@]}" -C "$dir/control" -cf - . | gzip -9n >"$dir/control.tar.gz"
	local file="$OUT/${name}_${VERSION}-r${RELEASE}_${arch}.ipk"
	"${TAR[@]}" -C "$dir" -cf - ./debian-binary ./data.tar.gz ./control.tar.gz | gzip -9n >"$file"
	echo "$file: $(stat -c %s "$file") bytes, installed $size bytes"
}

# --- pathosd / pathosd-nossl: what Package/pathosd/install lays out ----------

D="$WORK/data-$NAME"
install -d -m0755 "$D/usr/sbin" "$D/etc/init.d" "$D/etc/config" "$D/usr/share/acl.d"
install -m0755 "$BIN" "$D/usr/sbin/pathosd"
install -m0755 files/pathosd.init "$D/etc/init.d/pathosd"
install -m0600 files/pathosd.config "$D/etc/config/pathosd"
install -m0644 files/pathosd.acl.json "$D/usr/share/acl.d/pathosd.json"

# As the feed Makefile declares them: the wget-ssl/wget-nossl way, same
# files and config; pathosd-nossl provides pathosd (LuCI's dependency is met
# by either) and conflicts with it.
if [ "$NAME" = pathosd ]; then
	variant=''
	title="Health-checking BGP VIP announcer"
else
	variant="Provides: pathosd
Conflicts: pathosd
"
	title="Health-checking BGP VIP announcer (without TLS)"
fi
control="Package: $NAME
Version: $VERSION-r$RELEASE
Depends: libc
${variant}Source: feeds/pathosd/pathosd
SourceName: pathosd
License: $LICENSE
LicenseFiles: $LICENSE_FILES
Section: net
SourceDateEpoch: $EPOCH
Maintainer: $MAINTAINER
Architecture: $ARCH
Description:  $title"
ipk "$NAME" "$ARCH" "$D" "$control" /etc/config/pathosd

# --- luci-app-pathosd: luci.mk's layout (htdocs -> /www, root -> /) ---------

L="$WORK/data-luci"
mkdir -p "$L/www"
cp -R luci-app/htdocs/. "$L/www/"
cp -R luci-app/root/. "$L/"
find "$L" -type d -exec chmod 0755 {} +
find "$L" -type f -exec chmod 0644 {} +
control="Package: luci-app-pathosd
Version: $VERSION-r$RELEASE
Depends: libc, luci-base, pathosd
Source: feeds/pathosd/luci-app-pathosd
SourceName: luci-app-pathosd
License: $LICENSE
Section: luci
SourceDateEpoch: $EPOCH
Maintainer: $MAINTAINER
Architecture: all
Description:  LuCI support for pathosd"
ipk luci-app-pathosd all "$L" "$control"
