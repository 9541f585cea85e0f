#!/usr/bin/env bash
# Builds installable OpenWrt packages without the SDK, from a cross-built
# pathosd binary (scripts/cross-build.sh), files/ and luci-app/:
#
#   OUT/pathosd_VERSION-rRELEASE_ARCH.ipk          (binary with TLS), or
#   OUT/pathosd-nossl_VERSION-rRELEASE_ARCH.ipk    (binary built --no-default-features)
#   OUT/luci-app-pathosd_VERSION-rRELEASE_all.ipk  (opkg: OpenWrt 24.10 and older)
#   OUT/ARCH/pathosd[-nossl]-VERSION-rRELEASE.apk
#   OUT/ARCH/luci-app-pathosd-VERSION-rRELEASE.apk  (apk-tools v3: OpenWrt 25.12)
#
#   scripts/build-packages.sh --bin FILE --arch ARCH [--runner QEMU] [--out DIR] [--release N]
#
# ARCH is OpenWrt's package architecture (mips_24kc, mipsel_24kc,
# arm_cortex-a7_neon-vfpv4, aarch64_generic, x86_64...). RUNNER runs the binary
# (qemu-mips-static for a mips build); the binary's own `--version` decides
# the package: its first line must be "pathosd PKG_VERSION" and its
# "features:" line names the variant, so a package can never carry the other
# variant's binary. --release replaces the feed's PKG_RELEASE (a rebuild of
# the same version that package managers must see as newer). The .apk files
# sit in a directory per architecture, as OpenWrt names them without one
# (NAME-VERSION.apk).
#
# The .ipk layout is OpenWrt's scripts/ipkg-build: a gzipped tar of
# ./debian-binary, ./data.tar.gz and ./control.tar.gz, every file owned by
# root, with the control fields, conffiles and the postinst/prerm that
# OpenWrt's package-pack.mk generates (they call default_postinst and
# default_prerm from /lib/functions.sh).
#
# The .apk is what package-pack.mk makes when CONFIG_USE_APK is set (OpenWrt
# 25.12): the same files plus lib/apk/packages/NAME.list (the files, read by
# default_postinst), NAME.conffiles and NAME.conffiles_static (each conffile
# and its sha256, for sysupgrade), the post-install/post-upgrade/
# pre-deinstall scripts it writes, and the same `apk mkpkg` options. apk-tools
# v3 is not in Debian 12, so scripts/apk-mkpkg.py writes the package: the
# project's own writer of the ADB format, byte for byte what `apk mkpkg`
# 3.0.6 writes (docs/testing.md). The packages are unsigned; see
# docs/openwrt.md for installing them and for the SDK's signed feeds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BIN='' ARCH='' RUNNER='' OUT="$ROOT/target/packages" RELEASE_ARG=''
while [ "$#" -gt 0 ]; do
	case "$1" in
		--bin) BIN=$2; shift 2 ;;
		--arch) ARCH=$2; shift 2 ;;
		--runner) RUNNER=$2; shift 2 ;;
		--out) OUT=$2; shift 2 ;;
		--release) RELEASE_ARG=$2; shift 2 ;;
		*) echo "build-packages: unknown argument $1" >&2; exit 2 ;;
	esac
done
die() { echo "build-packages: $*" >&2; exit 1; }
if [ -z "$BIN" ] || [ -z "$ARCH" ]; then
	echo "usage: $0 --bin FILE --arch ARCH [--runner QEMU] [--out DIR] [--release N]" >&2
	exit 2
fi
[ -f "$BIN" ] || die "no binary at $BIN"
case "$ARCH" in *[!a-z0-9_-]* | "") die "bad architecture name $ARCH" ;; esac

mk() { sed -n "s/^$1:=//p" openwrt-feed/pathosd/Makefile | head -n 1; }
VERSION=$(mk PKG_VERSION)
RELEASE=${RELEASE_ARG:-$(mk PKG_RELEASE)}
case "$RELEASE" in *[!0-9]* | "") die "release must be a number, not '$RELEASE'" ;; esac
LICENSE=$(mk PKG_LICENSE)
LICENSE_FILES=$(mk PKG_LICENSE_FILES)
MAINTAINER=$(mk PKG_MAINTAINER)
URL=$(sed -n 's/^  URL:=//p' openwrt-feed/pathosd/Makefile | head -n 1)
if [ -z "$VERSION" ] || [ -z "$RELEASE" ]; then
	die "PKG_VERSION/PKG_RELEASE not found in openwrt-feed/pathosd/Makefile"
fi

# desc NAME: the lines of `define Package/NAME/description` in the feed
# Makefile, each without its leading blanks, with a `$(call
# Package/OTHER/description)` line replaced by OTHER's lines (as make
# expands it). luci.mk defines none: OpenWrt then uses the title.
desc() {
	local line
	if [ "$1" = luci-app-pathosd ]; then
		sed -n 's/^LUCI_TITLE:=//p' luci-app/Makefile
		return
	fi
	sed -n "/^define Package\/$1\/description\$/,/^endef\$/p" openwrt-feed/pathosd/Makefile |
		sed '1d;$d' | while IFS= read -r line; do
		line=$(printf '%s\n' "$line" | sed 's/^[[:space:]]*//')
		# shellcheck disable=SC2016 # make's syntax, not the shell's
		case "$line" in
			'$(call Package/'*'/description)')
				line=${line#\$(call Package/}
				desc "${line%/description)}"
				;;
			*) printf '%s\n' "$line" ;;
		esac
	done
}

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

# PATHOSD_APK_MKPKG="/path/to/apk mkpkg" makes the .apk with apk-tools'
# own writer instead (run it as root or under fakeroot, as OpenWrt does):
# the way docs/testing.md compares the two.
MKPKG=${PATHOSD_APK_MKPKG:-python3 scripts/apk-mkpkg.py}

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

# luci.mk's Package/postinst, which every LuCI app built with the SDK gets
# (package-pack.mk: postinst-pkg beside the .ipk's postinst, which
# default_postinst runs; appended to the .apk's post-install): drop LuCI's
# caches and reload rpcd, which reads its exec plugins (pathosd's
# /usr/libexec/rpcd/pathosd-staged) only when it starts or is reloaded.
# shellcheck disable=SC2016
LUCI_POSTINST='[ -n "${IPKG_INSTROOT}" ] || {
	rm -f /tmp/luci-indexcache.*
	rm -rf /tmp/luci-modulecache/
	/etc/init.d/rpcd reload 2>/dev/null
	exit 0
}'

# ipk NAME ARCH DATA_DIR CONTROL_TEXT [CONFFILES [POSTINST_PKG]]: writes
# NAME_V-rR_ARCH.ipk.
ipk() {
	local name=$1 arch=$2 data=$3 control=$4 conffiles=${5:-} postinst_pkg=${6:-}
	local dir="$WORK/$name" size
	rm -rf "$dir"
	mkdir -p "$dir/control"
	# Installed-Size: bytes of the files, as ipkg-build counts them.
	size=$(find "$data" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	{
		printf '%s\n' "$control"
		echo "Installed-Size: $size"
		# package-pack.mk: "Description: ", then each line of the
		# description with its leading blanks made one space.
		printf 'Description: '
		desc "$name" | sed 's/^/ /'
	} >"$dir/control/control"
	[ -z "$conffiles" ] || printf '%s\n' "$conffiles" >"$dir/control/conffiles"
	printf '%s\n' "$POSTINST" >"$dir/control/postinst"
	printf '%s\n' "$PRERM" >"$dir/control/prerm"
	chmod 0644 "$dir/control/control"
	[ -z "$conffiles" ] || chmod 0644 "$dir/control/conffiles"
	chmod 0755 "$dir/control/postinst" "$dir/control/prerm"
	if [ -n "$postinst_pkg" ]; then
		printf '%s\n' "$postinst_pkg" >"$dir/control/postinst-pkg"
		chmod 0755 "$dir/control/postinst-pkg"
	fi
	echo "2.0" >"$dir/debian-binary"
	"${TAR[@]}" -C "$data" -cf - . | gzip -9n >"$dir/data.tar.gz"
	"${TAR[@]}" -C "$dir/control" -cf - . | gzip -9n >"$dir/control.tar.gz"
	local file="$OUT/${name}_${VERSION}-r${RELEASE}_${arch}.ipk"
	"${TAR[@]}" -C "$dir" -cf - ./debian-binary ./data.tar.gz ./control.tar.gz | gzip -9n >"$file"
	echo "$file: $(stat -c %s "$file") bytes, installed $size bytes"
}

# apk NAME ARCH DATA_DIR CONFFILES POSTINST_PKG -- INFO...: writes
# ARCH/NAME-V-rR.apk the way package-pack.mk does with CONFIG_USE_APK: the
# package's files plus lib/apk/packages/NAME.{list,conffiles,conffiles_static},
# OpenWrt's three scripts (POSTINST_PKG, if any, at the end of post-install),
# then `apk mkpkg` with INFO (name, version, description and files added
# here).
apk() {
	local name=$1 arch=$2 data=$3 conffiles=$4 postinst_pkg=$5
	shift 6
	local idir="$WORK/apk-$name" adir="$WORK/apk-scripts-$name" f csum
	rm -rf "$idir" "$adir"
	mkdir -p "$adir"
	cp -a "$data" "$idir"
	mkdir -p "$idir/lib/apk/packages"
	# Every directory 0755 (INSTALL_DIR), whatever the umask: the package
	# records each one's mode.
	find "$idir" -type d -exec chmod 0755 {} +
	# The file list, written before the conffiles files exist: what
	# default_postinst and default_prerm read to find /etc/init.d/*.
	(cd "$idir" && find . \( -type f -o -type l \) -printf '/%P\n' | LC_ALL=C sort) >"$WORK/$name.list"
	mv "$WORK/$name.list" "$idir/lib/apk/packages/$name.list"
	if [ -n "$conffiles" ]; then
		printf '%s\n' "$conffiles" >"$idir/lib/apk/packages/$name.conffiles"
		for f in $conffiles; do
			[ -f "$idir/$f" ] || continue
			csum=$(sha256sum "$idir/$f" | cut -d' ' -f1)
			echo "$f $csum" >>"$idir/lib/apk/packages/$name.conffiles_static"
		done
	fi
	find "$idir/lib/apk/packages" -type f -exec chmod 0644 {} +

	# apk runs a script from a memfd: $0 is /proc/self/fd/N, so the
	# scripts name the package in $pkgname instead (default_postinst and
	# default_prerm read it, and NAME.list through it). post-upgrade is
	# post-install with PKG_UPGRADE=1.
	# shellcheck disable=SC2016
	printf '%s\n' '#!/bin/sh' \
		'[ "${IPKG_NO_SCRIPT}" = "1" ] && exit 0' \
		'[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0' \
		'. ${IPKG_INSTROOT}/lib/functions.sh' \
		'export root="${IPKG_INSTROOT}"' \
		"export pkgname=\"$name\"" \
		'add_group_and_user' \
		'default_postinst' >"$adir/post-install"
	[ -z "$postinst_pkg" ] || printf '%s\n' "$postinst_pkg" | sed '/^[[:space:]]*#!/d' >>"$adir/post-install"
	{
		echo '#!/bin/sh'
		echo 'export PKG_UPGRADE=1'
		sed '/^[[:space:]]*#!/d' "$adir/post-install"
	} >"$adir/post-upgrade"
	# shellcheck disable=SC2016
	printf '%s\n' '#!/bin/sh' \
		'[ -s ${IPKG_INSTROOT}/lib/functions.sh ] || exit 0' \
		'. ${IPKG_INSTROOT}/lib/functions.sh' \
		'export root="${IPKG_INSTROOT}"' \
		"export pkgname=\"$name\"" \
		'default_prerm' >"$adir/pre-deinstall"

	mkdir -p "$OUT/$arch"
	local file="$OUT/$arch/$name-$VERSION-r$RELEASE.apk"
	# The description as make's $(strip) leaves it: one line.
	# shellcheck disable=SC2086 # a command and its arguments
	SOURCE_DATE_EPOCH=$EPOCH $MKPKG \
		--info "name:$name" \
		--info "version:$VERSION-r$RELEASE" \
		--info "description:$(desc "$name" | tr '\n' ' ' | sed 's/ *$//')" \
		"$@" \
		--script "post-install:$adir/post-install" \
		--script "post-upgrade:$adir/post-upgrade" \
		--script "pre-deinstall:$adir/pre-deinstall" \
		--files "$idir" \
		--output "$file"
	echo "$file: $(stat -c %s "$file") bytes, installed $(find "$idir" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }') bytes"
}

# --- pathosd / pathosd-nossl: what Package/pathosd/install lays out ----------

D="$WORK/data-$NAME"
install -d -m0755 "$D" "$D/usr/sbin" "$D/etc/init.d" "$D/etc/config" "$D/usr/share/acl.d" "$D/usr/libexec/rpcd"
# The hooks' directory (hooks_dir), empty: other packages and the owner put
# their scripts there.
install -d -m0755 "$D/etc/hotplug.d/pathosd"
install -m0755 "$BIN" "$D/usr/sbin/pathosd"
install -m0755 files/pathosd.init "$D/etc/init.d/pathosd"
install -m0600 files/pathosd.config "$D/etc/config/pathosd"
install -m0644 files/pathosd.acl.json "$D/usr/share/acl.d/pathosd.json"
install -m0755 files/pathosd-staged.rpcd "$D/usr/libexec/rpcd/pathosd-staged"

# As the feed Makefile declares them: the wget-ssl/wget-nossl way, same
# files and config; pathosd-nossl provides pathosd (LuCI's dependency is met
# by either) and conflicts with it.
if [ "$NAME" = pathosd ]; then
	variant=''
else
	variant="Provides: pathosd
Conflicts: pathosd
"
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
URL: $URL
Maintainer: $MAINTAINER
Architecture: $ARCH"
ipk "$NAME" "$ARCH" "$D" "$control" /etc/config/pathosd

# apk: OpenWrt 25.12's provides (include/package-pack.mk, FormatProvides and
# the implicit "@NAME-any" of every package): a provide is versioned,
# pathosd-nossl's "pathosd=VERSION", so either variant meets
# luci-app-pathosd's dependency and the two cannot be installed together
# (the apk side has no conflicts field); "NAME-any" is virtual. The default
# variant (DEFAULT_VARIANT:=1) gets provider-priority 100.
if [ "$NAME" = pathosd ]; then
	apk_variant=(--info "provides:pathosd-any" --info "provider-priority:100")
else
	apk_variant=(--info "provides:pathosd=$VERSION-r$RELEASE pathosd-nossl-any")
fi
apk "$NAME" "$ARCH" "$D" /etc/config/pathosd "" -- \
	--info "arch:$ARCH" \
	--info "license:$LICENSE" \
	--info "origin:feeds/pathosd/pathosd" \
	--info "url:$URL" \
	--info "maintainer:$MAINTAINER" \
	"${apk_variant[@]}" \
	--info "depends:libc"

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
Architecture: all"
ipk luci-app-pathosd all "$L" "$control" "" "$LUCI_POSTINST"
# PKGARCH all becomes "noarch" (apk refuses "all"); it goes beside the
# pathosd package of this architecture.
apk luci-app-pathosd "$ARCH" "$L" "" "$LUCI_POSTINST" -- \
	--info "arch:noarch" \
	--info "license:$LICENSE" \
	--info "origin:feeds/pathosd/luci-app-pathosd" \
	--info "maintainer:$MAINTAINER" \
	--info "provides:luci-app-pathosd-any" \
	--info "depends:libc luci-base pathosd"
