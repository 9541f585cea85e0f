#!/usr/bin/env bash
# Builds OpenWrt's userland from a folder of source checkouts, for running
# pathosd's init script and packages on the real parts (boot.sh, flows.sh):
#
#   scripts/openwrt-real/build.sh SRC OUT
#
# SRC holds one folder per project, each checked out (cloned, or exported
# with `git archive`: any means, this script fetches nothing) at the commit
# below. A checkout's commit is read from its .git, an export's from a file
# `.commit` in its folder holding the full hash; a folder at another commit
# is refused.
#
#   folder       repository              commit    what is built
#   libubox      openwrt/libubox         1aa36ee   libubox, blobmsg_json, json_script, jshn + share/libubox/jshn.sh
#   ubus         openwrt/ubus            3cc98db   libubus, ubusd, ubus
#   uci          openwrt/uci             66127cd   libuci, uci
#   udebug       openwrt/udebug          875e1a7   libudebug only (procd and logd link it)
#   procd        openwrt/procd           2c1834a   procd, udevtrigger, askfirst
#   ubox         openwrt/ubox            6f78fa4   validate_data, logd, logread (and the rest of ubox)
#   jsonpath     openwrt/jsonpath        f4fe702   jsonfilter (later commits read stdin only with -i/-s,
#                                                  and procd.sh's procd_running pipes into it)
#   rpcd         openwrt/rpcd            4476687   rpcd with its file and rpcsys plugins (no iwinfo, no ucode)
#   opkg-lede    openwrt/opkg-lede       38eccbb   opkg (no usign)
#   apk-tools    alpinelinux/apk-tools   7e92634   apk 3.0.6 (tag v3.0.6), meson, libapk static, zstd
#
# boot.sh also takes SRC/openwrt-files (OpenWrt's shell files, see there).
#
# OUT is an installation prefix: OUT/bin, OUT/sbin, OUT/lib (shared
# libraries, rpcd plugins in lib/rpcd), OUT/include, OUT/share (libubox/jshn.sh).
# Everything is compiled for OpenWrt's paths (prefix /usr: rpcd looks for
# /usr/lib/rpcd and /usr/share/rpcd/acl.d, ubusd listens on
# /var/run/ubus/ubus.sock), installed into OUT, and linked against the
# libraries of OUT and of Debian 12 (json-c, OpenSSL, zlib, zstd, libcrypt)
# without an rpath: boot.sh copies OUT and those Debian libraries into a
# root. Build trees go to OUT/.build (SRC is only read). Rebuilding a
# project: delete OUT/.build/NAME.done.
#
# Debian 12's gcc 12 needs two things these sources do not have: warnings
# that -Werror turns into errors (procd: format-overflow) are kept warnings
# (the compiler is wrapped to add -Wno-error last), and procd and rpcd call
# strlcpy, which glibc 2.36 lacks (a compatible one is force-included).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

die() { echo "openwrt-real/build: $*" >&2; exit 1; }
[ "$#" -eq 2 ] || { echo "usage: $0 SRC OUT" >&2; exit 2; }
SRC=$(cd "$1" 2>/dev/null && pwd) || die "no source folder $1"
mkdir -p "$2"
OUT=$(cd "$2" && pwd)

# name:commit, in build order (each links the ones before it).
PROJECTS=(
	libubox:1aa36ee774c8db4d7a396903e0d2e1fb79ee8bf1
	ubus:3cc98db1a422dcf560f2d6347fd410f17565a89d
	uci:66127cd76c5d0bd46d5a90302cc6110f53a4e2f8
	udebug:875e1a7af6ca9d86524d18169c3a79f4a1920053
	procd:2c1834abae171261f2d9161e5a28c36cbcc394a4
	ubox:6f78fa496bf36c55864a41e353df7d13f04b1077
	jsonpath:f4fe702d0e8d9f8704b42f5d5c10950470ada231
	rpcd:4476687403d8c6e988eaa1ecc892e998838e6da9
	opkg-lede:38eccbb1fd694d4798ac1baf88f9ba83d1eac616
	apk-tools:7e92634afe99db29e00037e6a134104ad9720b68
)

# commit_of DIR: the commit a folder is at, or nothing.
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
	dir="$SRC/$name"
	if [ ! -d "$dir" ]; then
		missing+=("$name: no folder $dir (want ${want:0:7})")
		continue
	fi
	have=$(commit_of "$dir")
	if [ -z "$have" ]; then
		missing+=("$name: $dir is neither a git checkout nor has a .commit file (want $want)")
	elif [ "$have" != "$want" ]; then
		missing+=("$name: $dir is at $have, want $want")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	printf 'openwrt-real/build: %s\n' "${missing[@]}" >&2
	die "SRC ($SRC) lacks the sources above: check them out at those commits (nothing is fetched here)"
fi

# shellcheck source=scripts/apt.sh
. "$REPO/scripts/apt.sh"
apt_ensure build-essential cmake pkg-config libjson-c-dev libcrypt-dev \
	meson ninja-build libssl-dev zlib1g-dev libzstd-dev

BUILD="$OUT/.build"
mkdir -p "$BUILD" "$OUT/bin" "$OUT/sbin" "$OUT/lib" "$OUT/include" "$OUT/share"
JOBS=$(nproc)

# The compiler, with -Wno-error after every flag the projects add.
cat >"$BUILD/cc" <<'EOF'
#!/bin/sh
exec gcc "$@" -Wno-error
EOF
chmod +x "$BUILD/cc"
# strlcpy for glibc before 2.38 (BSD semantics: the length of src).
cat >"$BUILD/strlcpy.h" <<'EOF'
#include <features.h>
#include <string.h>
#if defined(__GLIBC__) && (__GLIBC__ == 2 && __GLIBC_MINOR__ < 38)
static inline size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src);
	if (size) {
		size_t n = len >= size ? size - 1 : len;
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return len;
}
#endif
EOF

# cmake_project NAME [EXTRA_CFLAGS] -- CMAKE_ARGS...: configure (prefix
# /usr, OUT searched first), build, install into OUT. IN_SOURCE=1: a project
# whose build steps name their files relative to the build folder
# (jsonpath's lemon) is built in a copy of its sources.
cmake_project() {
	local name=$1 cflags=$2
	shift 3
	local b="$BUILD/$name" s="$SRC/$name"
	rm -rf "$b"
	if [ "${IN_SOURCE:-0}" = 1 ]; then
		cp -a "$SRC/$name" "$b"
		s=$b
	fi
	cmake -S "$s" -B "$b" -G "Unix Makefiles" \
		-DCMAKE_C_COMPILER="$BUILD/cc" \
		-DCMAKE_C_FLAGS="-I$OUT/include $cflags" \
		-DCMAKE_EXE_LINKER_FLAGS="-L$OUT/lib" \
		-DCMAKE_SHARED_LINKER_FLAGS="-L$OUT/lib" \
		-DCMAKE_MODULE_LINKER_FLAGS="-L$OUT/lib" \
		-DCMAKE_PREFIX_PATH="$OUT" \
		-DCMAKE_INSTALL_PREFIX=/usr \
		-DCMAKE_INSTALL_LIBDIR=lib \
		-DCMAKE_SKIP_RPATH=ON \
		-DCMAKE_BUILD_TYPE=None \
		"$@" >"$b.log" 2>&1 || { tail -n 30 "$b.log" >&2; die "$name: cmake failed (log: $b.log)"; }
	make -C "$b" -j"$JOBS" "${MAKE_TARGETS[@]}" >>"$b.log" 2>&1 ||
		{ tail -n 40 "$b.log" >&2; die "$name: build failed (log: $b.log)"; }
}
cmake_install() {
	local name=$1
	cmake --install "$BUILD/$name" --prefix "$OUT" >>"$BUILD/$name.log" 2>&1 ||
		{ tail -n 20 "$BUILD/$name.log" >&2; die "$name: install failed (log: $BUILD/$name.log)"; }
}

built() { [ -f "$BUILD/$1.done" ]; }
done_() { date -u +%FT%TZ >"$BUILD/$1.done"; echo "built $1"; }

MAKE_TARGETS=()
total_start=$(date +%s)

if ! built libubox; then
	cmake_project libubox "" -- -DBUILD_LUA=OFF -DBUILD_EXAMPLES=OFF -DUNIT_TESTING=OFF
	cmake_install libubox
	[ -x "$OUT/bin/jshn" ] || die "libubox: no jshn built (json-c not found?)"
	[ -f "$OUT/share/libubox/jshn.sh" ] || die "libubox: no share/libubox/jshn.sh installed"
	done_ libubox
fi

if ! built ubus; then
	cmake_project ubus "" -- -DBUILD_LUA=OFF -DBUILD_EXAMPLES=OFF -DUNIT_TESTING=OFF
	cmake_install ubus
	done_ ubus
fi

if ! built uci; then
	cmake_project uci "" -- -DBUILD_LUA=OFF -DUNIT_TESTING=OFF
	cmake_install uci
	done_ uci
fi

if ! built udebug; then
	# Only the library: its ucode module needs ucode's headers, and
	# udebugd is not needed. The ucode header path must still be set
	# (an empty folder) for cmake to generate.
	MAKE_TARGETS=(udebug)
	mkdir -p "$BUILD/no-ucode"
	cmake_project udebug "" -- -Ducode_include_dir="$BUILD/no-ucode"
	MAKE_TARGETS=()
	cp -a "$BUILD/udebug"/libudebug.so* "$OUT/lib/"
	cp "$SRC/udebug/udebug.h" "$SRC/udebug/udebug-pcap.h" "$OUT/include/"
	done_ udebug
fi

if ! built procd; then
	cmake_project procd "-include $BUILD/strlcpy.h" -- \
		-DSECCOMP_SUPPORT=OFF -DJAIL_SUPPORT=OFF -DUTRACE_SUPPORT=OFF
	cmake_install procd
	done_ procd
fi

if ! built ubox; then
	cmake_project ubox "" --
	cmake_install ubox
	done_ ubox
fi

if ! built jsonpath; then
	IN_SOURCE=1 cmake_project jsonpath "" --
	cmake_install jsonpath
	mv -f "$OUT/bin/jsonpath" "$OUT/bin/jsonfilter"
	done_ jsonpath
fi

if ! built rpcd; then
	cmake_project rpcd "-include $BUILD/strlcpy.h" -- \
		-DFILE_SUPPORT=ON -DRPCSYS_SUPPORT=ON -DIWINFO_SUPPORT=OFF -DUCODE_SUPPORT=OFF
	cmake_install rpcd
	done_ rpcd
fi

if ! built opkg-lede; then
	cmake_project opkg-lede "" -- -DBUILD_TESTS=OFF -DENABLE_USIGN=OFF -DVERSION=38eccbb \
		-DHOST_CPU=x86_64 -DBUILD_CPU=x86_64
	cmake_install opkg-lede
	mv -f "$OUT/bin/opkg-cl" "$OUT/bin/opkg"
	done_ opkg-lede
fi

if ! built apk-tools; then
	b="$BUILD/apk-tools"
	rm -rf "$b"
	# Static libapk: the shared build installs libapk.so without an rpath
	# and apk does not start. Paths (/etc/apk, /lib/apk/db) do not depend
	# on the prefix.
	CC="$BUILD/cc" meson setup "$b" "$SRC/apk-tools" --prefix=/usr \
		--default-library=static -Dzstd=enabled -Dlua=disabled -Dhelp=disabled \
		-Ddocs=disabled -Dpython=disabled -Dtests=disabled >"$b.log" 2>&1 ||
		{ tail -n 30 "$b.log" >&2; die "apk-tools: meson setup failed (log: $b.log)"; }
	ninja -C "$b" -j"$JOBS" >>"$b.log" 2>&1 ||
		{ tail -n 40 "$b.log" >&2; die "apk-tools: build failed (log: $b.log)"; }
	install -m 0755 "$b/src/apk" "$OUT/bin/apk"
	done_ apk-tools
fi

# What boot.sh and flows.sh use, each where it must be.
want=(bin/jshn share/libubox/jshn.sh bin/ubus sbin/ubusd bin/uci sbin/procd sbin/udevtrigger
	sbin/validate_data sbin/logd sbin/logread bin/jsonfilter sbin/rpcd lib/rpcd/file.so
	lib/rpcd/rpcsys.so bin/opkg bin/apk lib/libubox.so lib/libubus.so lib/libuci.so
	lib/libudebug.so lib/libblobmsg_json.so lib/libjson_script.so lib/libvalidate.so)
absent=()
for f in "${want[@]}"; do [ -e "$OUT/$f" ] || absent+=("$f"); done
[ "${#absent[@]}" -eq 0 ] || die "not in $OUT after the build: ${absent[*]}"
"$OUT/bin/apk" --version >/dev/null 2>&1 || die "$OUT/bin/apk does not run"
echo "openwrt-real/build: OpenWrt's userland in $OUT ($(($(date +%s) - total_start)) s)"
