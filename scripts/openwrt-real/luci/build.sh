#!/usr/bin/env bash
# Builds LuCI's server side and lays out LuCI's files, for running the
# pathosd views in the real LuCI client (flows.sh here) on the userland of
# ../build.sh:
#
#   scripts/openwrt-real/luci/build.sh SRC OUT
#
# SRC and OUT are ../build.sh's: OUT must hold its build (libubox, ubus,
# uci, rpcd ...: run ../build.sh SRC OUT first). SRC also holds, each checked
# out (or exported with a `.commit` file, as ../build.sh explains) at:
#
#   folder     repository                  commit    what is built
#   ucode      jow-/ucode                  81205a2   ucode, libucode, its modules (fs, uci, ubus, log,
#                                                    uloop, math, struct, socket, io, debug, resolv)
#   rpcd       openwrt/rpcd                4476687   (../build.sh's checkout) again, for its ucode plugin
#                                                    host (rpcd-mod-ucode), which ../build.sh leaves out
#   uhttpd     openwrt/uhttpd              f682cca   uhttpd with its ubus plugin and ucode handler (no
#                                                    TLS, no Lua)
#   lucihttp   jow-/lucihttp               9b5b683   liblucihttp and its ucode binding
#   luci       openwrt/luci                459941f   luci-base (its C module core.so, built here),
#                                                    luci-mod-status, luci-theme-bootstrap, and
#                                                    ucode-mod-html (the luci tree carries it:
#                                                    contrib/package/ucode-mod-html; luci-base's
#                                                    dispatcher imports 'html')
#
# (luci 459941f is the upstream base of x-wrt/luci's master: the same tree
# as openwrt/luci at that commit, fetched from that mirror.)
#
# Everything goes into OUT/luci-root, laid out as OpenWrt's packages lay
# out those files on a router: /usr/bin/ucode, /usr/lib/libucode.so*,
# /usr/lib/ucode/*.so (luci/core.so too), /usr/lib/rpcd/ucode.so,
# /usr/sbin/uhttpd, /usr/lib/uhttpd_{ubus,ucode}.so, /usr/lib/liblucihttp.so*,
# and LuCI's packages as luci.mk installs them (htdocs -> /www, ucode ->
# /usr/share/ucode/luci, root -> /). Headers land in OUT/luci-root/usr/include
# (the later builds here need them). ./boot.sh copies OUT/luci-root into a
# root made by ../boot.sh. The JavaScript is not minified (OpenWrt's
# default LUCI_JSMIN) and there are no translations (English); luci-mod-status's
# luci-bwc (its src/) is not built. Nothing is fetched; build trees go to
# OUT/.build/luci-* (delete OUT/.build/luci-NAME.done to rebuild one).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)

die() { echo "openwrt-real/luci/build: $*" >&2; exit 1; }
[ "$#" -eq 2 ] || { echo "usage: $0 SRC OUT" >&2; exit 2; }
SRC=$(cd "$1" 2>/dev/null && pwd) || die "no source folder $1"
OUT=$(cd "$2" 2>/dev/null && pwd) || die "no OUT folder $2: run ../build.sh SRC OUT first"
BUILD="$OUT/.build"
for f in "$BUILD/cc" "$BUILD/strlcpy.h" "$BUILD/rpcd.done" lib/libubox.so lib/libubus.so lib/libuci.so \
	lib/libblobmsg_json.so include/libubus.h sbin/rpcd; do
	case "$f" in /*) p=$f ;; *) p="$OUT/$f" ;; esac
	[ -e "$p" ] || die "no $p: run ../build.sh $SRC $OUT first"
done

PROJECTS=(
	ucode:81205a25437a83e3b9e1eb55ac169be84453d53b
	rpcd:4476687403d8c6e988eaa1ecc892e998838e6da9
	uhttpd:f682ccabee9ed5f39dd3b0aaf96228975eeb478d
	lucihttp:9b5b683fbb2bb0010aa031d620d0ab8105516757
	luci:459941fb2fdb7365b0169ea06e9148afdd0319e0
)
commit_of() {
	if [ -e "$1/.git" ]; then
		git -C "$1" rev-parse HEAD 2>/dev/null || true
	elif [ -f "$1/.commit" ]; then
		tr -d ' \n' <"$1/.commit"
	fi
}
missing=()
for p in "${PROJECTS[@]}"; do
	name=${p%%:*} want=${p#*:}
	have=$(commit_of "$SRC/$name")
	if [ ! -d "$SRC/$name" ]; then
		missing+=("$name: no folder $SRC/$name (want ${want:0:7})")
	elif [ "$have" != "$want" ]; then
		missing+=("$name: $SRC/$name is at '${have:-unknown}', want $want")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	printf 'openwrt-real/luci/build: %s\n' "${missing[@]}" >&2
	die "SRC ($SRC) lacks the sources above: check them out at those commits (nothing is fetched here)"
fi
LUCI="$SRC/luci"
for d in modules/luci-base modules/luci-mod-status themes/luci-theme-bootstrap \
	contrib/package/ucode-mod-html/src/html.c; do
	[ -e "$LUCI/$d" ] || die "no $LUCI/$d"
done

# shellcheck source=scripts/apt.sh
. "$REPO/scripts/apt.sh"
apt_ensure build-essential cmake pkg-config libjson-c-dev libcrypt-dev

LR="$OUT/luci-root"
mkdir -p "$LR/usr/bin" "$LR/usr/sbin" "$LR/usr/lib/ucode/luci" "$LR/usr/lib/rpcd" "$LR/usr/include"
JOBS=$(nproc)
CC="$BUILD/cc"

# cmake_build NAME SRCDIR EXTRA_CFLAGS -- CMAKE_ARGS...: configure (prefix
# /usr; OUT's and luci-root's headers and libraries found first) and build
# in OUT/.build/luci-NAME.
cmake_build() {
	local name=$1 src=$2 cflags=$3
	shift 4
	local b="$BUILD/luci-$name"
	rm -rf "$b"
	cmake -S "$src" -B "$b" -G "Unix Makefiles" \
		-DCMAKE_C_COMPILER="$CC" \
		-DCMAKE_C_FLAGS="-I$OUT/include -I$LR/usr/include $cflags" \
		-DCMAKE_EXE_LINKER_FLAGS="-L$OUT/lib -L$LR/usr/lib" \
		-DCMAKE_SHARED_LINKER_FLAGS="-L$OUT/lib -L$LR/usr/lib" \
		-DCMAKE_MODULE_LINKER_FLAGS="-L$OUT/lib -L$LR/usr/lib" \
		-DCMAKE_PREFIX_PATH="$OUT;$LR/usr" \
		-DCMAKE_INSTALL_PREFIX=/usr \
		-DCMAKE_INSTALL_LIBDIR=lib \
		-DCMAKE_SKIP_RPATH=ON \
		-DCMAKE_BUILD_TYPE=None \
		"$@" >"$b.log" 2>&1 || { tail -n 30 "$b.log" >&2; die "$name: cmake failed (log: $b.log)"; }
	make -C "$b" -j"$JOBS" >>"$b.log" 2>&1 || { tail -n 40 "$b.log" >&2; die "$name: build failed (log: $b.log)"; }
}
built() { [ -f "$BUILD/luci-$1.done" ]; }
done_() { date -u +%FT%TZ >"$BUILD/luci-$1.done"; echo "built $1"; }
start=$(date +%s)

if ! built ucode; then
	# The modules LuCI and rpcd's ucode scripts import, and the ones
	# without further dependencies; not nl80211/rtnl (libnl-tiny), digest
	# (libmd) or zlib.
	cmake_build ucode "$SRC/ucode" "" -- -DCOMPILE_SUPPORT=ON -DFS_SUPPORT=ON -DUCI_SUPPORT=ON \
		-DUBUS_SUPPORT=ON -DULOOP_SUPPORT=ON -DLOG_SUPPORT=ON -DMATH_SUPPORT=ON -DSTRUCT_SUPPORT=ON \
		-DSOCKET_SUPPORT=ON -DIO_SUPPORT=ON -DDEBUG_SUPPORT=ON -DRESOLV_SUPPORT=ON \
		-DRTNL_SUPPORT=OFF -DNL80211_SUPPORT=OFF -DDIGEST_SUPPORT=OFF -DZLIB_SUPPORT=OFF
	DESTDIR="$LR" cmake --install "$BUILD/luci-ucode" >>"$BUILD/luci-ucode.log" 2>&1 ||
		die "ucode: install failed (log: $BUILD/luci-ucode.log)"
	for m in fs uci ubus log uloop; do
		[ -f "$LR/usr/lib/ucode/$m.so" ] || die "ucode: no module $m.so built (log: $BUILD/luci-ucode.log)"
	done
	done_ ucode
fi

if ! built rpcd-ucode; then
	# The same rpcd as ../build.sh's; only the plugin is taken.
	cmake_build rpcd-ucode "$SRC/rpcd" "-include $BUILD/strlcpy.h" -- \
		-DFILE_SUPPORT=OFF -DRPCSYS_SUPPORT=OFF -DIWINFO_SUPPORT=OFF -DUCODE_SUPPORT=ON
	install -m 0755 "$BUILD/luci-rpcd-ucode/ucode.so" "$LR/usr/lib/rpcd/ucode.so"
	done_ rpcd-ucode
fi

if ! built uhttpd; then
	cmake_build uhttpd "$SRC/uhttpd" "" -- -DTLS_SUPPORT=OFF -DLUA_SUPPORT=OFF -DUBUS_SUPPORT=ON -DUCODE_SUPPORT=ON
	install -m 0755 "$BUILD/luci-uhttpd/uhttpd" "$LR/usr/sbin/uhttpd"
	install -m 0755 "$BUILD/luci-uhttpd/uhttpd_ubus.so" "$BUILD/luci-uhttpd/uhttpd_ucode.so" "$LR/usr/lib/"
	done_ uhttpd
fi

if ! built lucihttp; then
	cmake_build lucihttp "$SRC/lucihttp" "" -- -DBUILD_LUA=OFF -DBUILD_UCODE=ON -DBUILD_TESTS=OFF
	DESTDIR="$LR" cmake --install "$BUILD/luci-lucihttp" >>"$BUILD/luci-lucihttp.log" 2>&1 ||
		die "lucihttp: install failed (log: $BUILD/luci-lucihttp.log)"
	[ -f "$LR/usr/lib/ucode/lucihttp.so" ] || die "lucihttp: no ucode binding installed"
	done_ lucihttp
fi

if ! built html; then
	# What contrib/package/ucode-mod-html/Makefile does (symbols from the
	# process that loads it, as for every ucode module).
	"$CC" -O2 -fPIC -Wall -I"$LR/usr/include" -shared -Wl,--gc-sections -ffunction-sections \
		-o "$LR/usr/lib/ucode/html.so" "$LUCI/contrib/package/ucode-mod-html/src/html.c" \
		>"$BUILD/luci-html.log" 2>&1 || { cat "$BUILD/luci-html.log" >&2; die "html.so: build failed"; }
	done_ html
fi

if ! built luci-core; then
	# luci-base/src/Makefile's core.so and version.uc (luci.mk passes
	# LUCI_VERSION and LUCI_GITBRANCH), built in a copy: it writes into
	# its folder.
	b="$BUILD/luci-core"
	rm -rf "$b"
	cp -a "$LUCI/modules/luci-base/src" "$b"
	make -C "$b" CC="$CC" FPIC=-fPIC CFLAGS="-O2 -I$LR/usr/include" LDFLAGS="-L$LR/usr/lib" \
		LUCI_VERSION=git-459941f LUCI_GITBRANCH=master compile >"$b.log" 2>&1 ||
		{ tail -n 30 "$b.log" >&2; die "luci-base core.so: build failed (log: $b.log)"; }
	install -m 0755 "$b/core.so" "$LR/usr/lib/ucode/luci/core.so"
	mkdir -p "$LR/usr/share/ucode/luci"
	install -m 0644 "$b/version.uc" "$LR/usr/share/ucode/luci/version.uc"
	done_ luci-core
fi

# LuCI's packages as luci.mk installs them (always redone: it is a copy).
luci_pkg() {
	local d="$LUCI/$1"
	if [ -d "$d/ucode" ]; then
		mkdir -p "$LR/usr/share/ucode/luci"
		cp -pR "$d/ucode/." "$LR/usr/share/ucode/luci/"
	fi
	if [ -d "$d/htdocs" ]; then
		mkdir -p "$LR/www"
		cp -pR "$d/htdocs/." "$LR/www/"
	fi
	if [ -d "$d/root" ]; then cp -pR "$d/root/." "$LR/"; fi
}
luci_pkg modules/luci-base
luci_pkg modules/luci-mod-status
luci_pkg themes/luci-theme-bootstrap
# luci.mk's SubstituteVersion: ?v=VERSION on the themes' CSS and JS links.
find "$LR/usr/share/ucode/luci" -type f -name '*.ut' -exec sed -i \
	-e 's/{# *\([^ ]*\)PKG_VERSION *#}/\1git-459941f/g' \
	-e 's/"\({{ *\(media\|resource\) *}}[^"]*\.\(js\|css\)\)"/"\1?v=git-459941f"/g' {} +

want=(usr/bin/ucode usr/lib/libucode.so usr/lib/ucode/fs.so usr/lib/ucode/uci.so usr/lib/ucode/ubus.so
	usr/lib/ucode/log.so usr/lib/ucode/html.so usr/lib/ucode/lucihttp.so usr/lib/ucode/luci/core.so
	usr/lib/rpcd/ucode.so usr/sbin/uhttpd usr/lib/uhttpd_ubus.so usr/lib/uhttpd_ucode.so
	usr/share/ucode/luci/dispatcher.uc usr/share/ucode/luci/uhttpd.uc usr/share/ucode/luci/version.uc
	usr/share/rpcd/ucode/luci www/luci-static/resources/luci.js www/luci-static/bootstrap/cascade.css
	www/luci-static/resources/view/status/index.js usr/share/rpcd/acl.d/luci-base.json
	usr/share/rpcd/acl.d/luci-mod-status-index.json etc/config/luci)
absent=()
for f in "${want[@]}"; do [ -e "$LR/$f" ] || absent+=("$f"); done
[ "${#absent[@]}" -eq 0 ] || die "not in $LR after the build: ${absent[*]}"
echo "openwrt-real/luci/build: LuCI's server side and files in $LR ($(($(date +%s) - start)) s)"
