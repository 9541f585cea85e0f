#!/usr/bin/env bash
# A root laid out as OpenWrt, from OpenWrt's real userland (build.sh), booted
# with procd as PID 1 of a private PID and mount namespace, in the host's
# network namespace (so that a daemon inside peers over loopback with a BIRD
# outside):
#
#   scripts/openwrt-real/boot.sh root ROOT OUT SRC   # (re)make ROOT
#   scripts/openwrt-real/boot.sh start ROOT          # boot; prints PID 1's host PID
#   scripts/openwrt-real/boot.sh exec ROOT CMD       # run the shell command CMD inside
#   scripts/openwrt-real/boot.sh shell ROOT          # an interactive shell inside
#   scripts/openwrt-real/boot.sh pid ROOT            # PID 1's host PID (status 1 if not running)
#   scripts/openwrt-real/boot.sh stop ROOT           # kill PID 1 (and so everything inside)
#
# OUT is build.sh's prefix, SRC its source folder: the root takes OpenWrt's
# shell files from SRC/openwrt-files (same paths as on a router:
# etc/rc.common, lib/functions.sh, lib/functions/procd.sh,
# lib/functions/service.sh, lib/config/uci.sh, sbin/reload_config; each read
# from OpenWrt's repository, SRC/openwrt-files/SOURCES says where from). The
# versions the flows ran with:
#
#   etc/rc.common                 immortalwrt/immortalwrt  3e49abb  current rc.common
#                                                                   (extra_command, procd_lock
#                                                                   in stop and reload)
#   lib/functions.sh              openwrt/openwrt          01fa063  default_postinst/prerm for
#                                                                   opkg and apk
#   lib/functions/procd.sh        openwrt/openwrt          03eca6c
#   lib/functions/service.sh      openwrt/openwrt          9963ae1
#   lib/config/uci.sh             Lienol/openwrt           36141b7
#   sbin/reload_config            openwrt/openwrt          16e4dff  the `uci show` form
#
# The root:
#   * /bin/sh is Debian's busybox-static (its package is downloaded once with
#     apt-get into OUT/.debian and unpacked there, never installed: it
#     conflicts with Debian's busybox), with a link per applet. It runs its
#     own applets before PATH: call OpenWrt's tools by path (/sbin/logread).
#   * util-linux's flock (procd_lock needs one; busybox-static has none);
#   * OUT's programs where OpenWrt has them (/sbin/procd, ubusd, uci,
#     validate_data, logd, logread, rpcd; /bin/ubus, opkg; /usr/bin/jshn,
#     jsonfilter, apk), its libraries in /lib, rpcd's plugins in
#     /usr/lib/rpcd, /usr/share/libubox/jshn.sh; Debian's shared libraries
#     that they need at their host paths, with an ld.so.cache;
#   * /etc/inittab (rcS S boot at sysinit, rcS K shutdown), /etc/init.d/boot
#     (S10: /var's folders, then reload_config's first checksums, as
#     OpenWrt's boot does), /etc/init.d/log (S12: logd -S 64, respawned),
#     /etc/init.d/rpcd (S12); /etc/passwd with root and ubus (procd runs
#     ubusd as ubus); /var -> /tmp;
#   * /sbin/udevtrigger is a no-op: procd's coldplug would write to every
#     uevent of the host's /sys (the root has no /sys);
#   * opkg: /etc/opkg.conf (dest root /, arches all, noarch, x86_64) and a
#     status file listing what an image has (libc, libgcc1, libpthread,
#     librt); apk: /etc/apk/arch x86_64 (flows.sh makes the database).
#
# procd runs as in a container (the environment variable `container`): it
# keeps the /dev made here instead of mounting an empty one for coldplug.
# At start the namespace gets a tmpfs /tmp and /dev (null, zero, full,
# random, urandom, tty, /dev/kmsg a plain file: procd logs there before
# logd runs), its own /proc (with the host's /proc/kmsg hidden: logd would
# drain the host's kernel log), and /dev/console bound to ROOT.boot/console
# (procd's and the boot scripts' output). ROOT.boot/ holds the PID file.
# Nothing is started on the host but `unshare`; stop kills PID 1 only (the
# kernel then ends every process of the namespace).
set -euo pipefail

die() { echo "openwrt-real/boot: $*" >&2; exit 1; }
usage() {
	sed -n '7,12p' "$0" >&2
	exit 2
}
[ "$#" -ge 2 ] || usage
cmd=$1
ROOT=${2%/}
STATE="$ROOT.boot"
PATH_IN=/usr/sbin:/usr/bin:/sbin:/bin

# pid1: the host PID of the namespace's PID 1, if it is running.
pid1() {
	local p
	[ -f "$STATE/pid" ] || return 1
	p=$(cat "$STATE/pid")
	[ -n "$p" ] && [ -d "/proc/$p" ] || return 1
	# The PID could have been reused: it must have ROOT as its root.
	[ "$(readlink "/proc/$p/root")" = "$(cd "$ROOT" && pwd -P)" ] || return 1
	echo "$p"
}

# in_root CMD: CMD (a shell command line) inside, with a clean environment.
in_root() {
	local p
	p=$(pid1) || die "$ROOT is not running (boot.sh start $ROOT)"
	nsenter -t "$p" -p -m -r -w -- /usr/bin/env -i PATH=$PATH_IN HOME=/root \
		TERM="${TERM:-dumb}" /bin/sh -c "$1"
}

# copy_host_libs FILE...: the host's shared libraries FILE needs (not
# those of OUT), copied into ROOT at the same paths.
copy_host_libs() {
	local f lib
	for f in "$@"; do
		# ldd of OUT's programs: OUT/lib first, as in the root.
		# (Scripts and static programs have none: ldd fails on them.)
		{ LD_LIBRARY_PATH="$OUT/lib" ldd "$f" 2>/dev/null || true; } |
			sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
	done | sort -u | while read -r lib; do
		case "$lib" in "$OUT"/*) continue ;; esac
		[ -e "$ROOT$lib" ] && continue
		mkdir -p "$ROOT$(dirname "$lib")"
		cp -L "$lib" "$ROOT$lib"
	done
}

make_root() {
	[ "$#" -eq 4 ] || usage
	local out=$3 src=$4
	OUT=$(cd "$out" && pwd) || die "no OUT folder $out"
	local files="$src/openwrt-files"
	local f
	for f in etc/rc.common lib/functions.sh lib/functions/procd.sh \
		lib/functions/service.sh lib/config/uci.sh sbin/reload_config; do
		[ -f "$files/$f" ] || die "no $files/$f (OpenWrt's shell files: see $0)"
	done
	grep -q extra_command "$files/etc/rc.common" || die "$files/etc/rc.common has no extra_command: an old copy"
	grep -q 'procd_lock' "$files/etc/rc.common" || die "$files/etc/rc.common has no procd_lock: an old copy"
	grep -q '/usr/lib/opkg/info' "$files/lib/functions.sh" || die "$files/lib/functions.sh: default_postinst does not read /usr/lib/opkg/info"
	for f in sbin/procd sbin/ubusd bin/ubus bin/uci sbin/validate_data sbin/logd sbin/logread \
		bin/jshn bin/jsonfilter sbin/rpcd bin/opkg bin/apk share/libubox/jshn.sh; do
		[ -e "$OUT/$f" ] || die "no $OUT/$f: run build.sh first"
	done
	if pid1 >/dev/null; then die "$ROOT is running: stop it first"; fi

	# busybox-static, unpacked from Debian's package.
	local deb="$OUT/.debian/busybox-static"
	if [ ! -x "$deb/bin/busybox" ]; then
		rm -rf "$deb"
		mkdir -p "$deb"
		(cd "$OUT/.debian" && apt-get download busybox-static >"$OUT/.debian/download.log" 2>&1) ||
			die "cannot download Debian's busybox-static (apt-get download): $(cat "$OUT/.debian/download.log")"
		dpkg-deb -x "$OUT"/.debian/busybox-static_*.deb "$deb"
	fi
	file -b "$deb/bin/busybox" | grep -q 'statically linked' || die "$deb/bin/busybox is not static"

	rm -rf "$ROOT" "$STATE"
	mkdir -p "$ROOT" "$STATE"
	(cd "$ROOT" && mkdir -p bin sbin lib usr/bin usr/sbin usr/lib usr/share etc/config \
		etc/init.d etc/rc.d etc/apk dev proc sys tmp root overlay www usr/lib/opkg/info)
	ln -s tmp "$ROOT/var"

	install -m 0755 "$deb/bin/busybox" "$ROOT/bin/busybox"
	local applet
	for applet in $("$ROOT/bin/busybox" --list-full); do
		[ -e "$ROOT/$applet" ] || [ -L "$ROOT/$applet" ] || ln -s /bin/busybox "$ROOT/$applet"
	done
	rm -f "$ROOT/usr/bin/flock"
	install -m 0755 "$(command -v flock)" "$ROOT/usr/bin/flock"

	# OUT, where OpenWrt has each program.
	for f in "$OUT"/sbin/*; do install -m 0755 "$f" "$ROOT/sbin/"; done
	for f in "$OUT"/bin/*; do
		case "${f##*/}" in
			ubus | opkg) install -m 0755 "$f" "$ROOT/bin/" ;;
			uci) install -m 0755 "$f" "$ROOT/sbin/" ;;
			*) rm -f "$ROOT/usr/bin/${f##*/}"; install -m 0755 "$f" "$ROOT/usr/bin/" ;;
		esac
	done
	cp -a "$OUT"/lib/*.so* "$ROOT/lib/"
	if [ -d "$OUT/lib/rpcd" ]; then cp -a "$OUT/lib/rpcd" "$ROOT/usr/lib/"; fi
	mkdir -p "$ROOT/usr/share/libubox"
	cp -a "$OUT/share/libubox/." "$ROOT/usr/share/libubox/"
	# No coldplug: the root has no /sys, and the host's is not ours.
	printf '#!/bin/sh\nexit 0\n' >"$ROOT/sbin/udevtrigger"
	chmod 0755 "$ROOT/sbin/udevtrigger"
	copy_host_libs "$ROOT"/sbin/* "$ROOT"/bin/ubus "$ROOT"/bin/opkg "$ROOT"/usr/bin/jshn \
		"$ROOT"/usr/bin/jsonfilter "$ROOT"/usr/bin/apk "$ROOT"/usr/bin/flock "$ROOT"/lib/*.so* \
		"$ROOT"/usr/lib/rpcd/*.so
	printf '/lib\n/usr/lib\n' >"$ROOT/etc/ld.so.conf"
	ldconfig -r "$ROOT"

	# OpenWrt's shell files.
	install -m 0755 "$files/etc/rc.common" "$ROOT/etc/rc.common"
	install -m 0644 "$files/lib/functions.sh" "$ROOT/lib/functions.sh"
	mkdir -p "$ROOT/lib/functions" "$ROOT/lib/config"
	install -m 0644 "$files/lib/functions/procd.sh" "$ROOT/lib/functions/procd.sh"
	install -m 0644 "$files/lib/functions/service.sh" "$ROOT/lib/functions/service.sh"
	install -m 0644 "$files/lib/config/uci.sh" "$ROOT/lib/config/uci.sh"
	install -m 0755 "$files/sbin/reload_config" "$ROOT/sbin/reload_config"

	cat >"$ROOT/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/ash
daemon:*:1:1:daemon:/var:/bin/false
ubus:*:81:81:ubus:/var/run/ubus:/bin/false
nobody:*:65534:65534:nobody:/var:/bin/false
EOF
	cat >"$ROOT/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
ubus:x:81:
nogroup:x:65534:
EOF
	printf 'root:::0:99999:7:::\n' >"$ROOT/etc/shadow"
	chmod 0600 "$ROOT/etc/shadow"
	printf 'openwrt-real\n' >"$ROOT/etc/hostname"
	cat >"$ROOT/etc/inittab" <<'EOF'
::sysinit:/etc/init.d/rcS S boot
::shutdown:/etc/init.d/rcS K shutdown
EOF
	# What OpenWrt's /etc/init.d/boot does that matters here: /var's
	# folders, and reload_config's first checksums (so the first
	# reload_config after installing a package does nothing for it).
	cat >"$ROOT/etc/init.d/boot" <<'EOF'
#!/bin/sh /etc/rc.common

START=10
STOP=90

boot() {
	mkdir -p /var/lock /var/log /var/run /var/state /var/tmp /tmp/.uci
	chmod 1777 /var/lock /var/tmp
	chmod 0700 /tmp/.uci
	touch /var/log/wtmp /var/log/lastlog
	/sbin/reload_config
}
EOF
	cat >"$ROOT/etc/init.d/log" <<'EOF'
#!/bin/sh /etc/rc.common

START=12
STOP=99
USE_PROCD=1

start_service() {
	procd_open_instance
	procd_set_param command /sbin/logd -S 64
	procd_set_param respawn 5 1 -1
	procd_close_instance
}
EOF
	cat >"$ROOT/etc/init.d/rpcd" <<'EOF'
#!/bin/sh /etc/rc.common

START=12
USE_PROCD=1

start_service() {
	procd_open_instance
	procd_set_param command /sbin/rpcd -s /var/run/ubus/ubus.sock -t 30
	procd_set_param respawn
	procd_close_instance
}
EOF
	chmod 0755 "$ROOT/etc/init.d/boot" "$ROOT/etc/init.d/log" "$ROOT/etc/init.d/rpcd"
	ln -s ../init.d/boot "$ROOT/etc/rc.d/S10boot"
	ln -s ../init.d/log "$ROOT/etc/rc.d/S12log"
	ln -s ../init.d/rpcd "$ROOT/etc/rc.d/S12rpcd"
	touch "$ROOT/etc/config/system"

	cat >"$ROOT/etc/opkg.conf" <<'EOF'
dest root /
dest ram /tmp
lists_dir ext /var/opkg-lists
option overlay_root /overlay
arch all 1
arch noarch 1
arch x86_64 10
EOF
	local p
	for p in libc libgcc1 libpthread librt; do
		printf 'Package: %s\nVersion: 1.2.5-r4\nStatus: install user installed\nArchitecture: x86_64\nInstalled-Time: 0\n\n' "$p"
	done >"$ROOT/usr/lib/opkg/status"
	printf 'x86_64\n' >"$ROOT/etc/apk/arch"
	echo "openwrt-real/boot: made $ROOT"
}

start_root() {
	[ -x "$ROOT/sbin/procd" ] || die "$ROOT has no /sbin/procd: boot.sh root first"
	if p=$(pid1); then die "$ROOT is running already (PID $p)"; fi
	mkdir -p "$STATE"
	: >"$STATE/console"
	: >"$STATE/kmsg-hidden"
	local root
	root=$(cd "$ROOT" && pwd -P)
	# PID 1 of the namespace: mounts, then exec chroot procd.
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid unshare --pid --fork --mount-proc --mount --propagation private \
		/bin/sh -c '
			set -e
			r=$1 s=$2
			mount -t proc proc "$r/proc"
			mount --bind "$s/kmsg-hidden" "$r/proc/kmsg"
			mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/tmp"
			mount -t tmpfs -o mode=0755,nosuid tmpfs "$r/dev"
			mknod -m 666 "$r/dev/null" c 1 3
			mknod -m 666 "$r/dev/zero" c 1 5
			mknod -m 666 "$r/dev/full" c 1 7
			mknod -m 666 "$r/dev/random" c 1 8
			mknod -m 666 "$r/dev/urandom" c 1 9
			mknod -m 666 "$r/dev/tty" c 5 0
			mkdir -p "$r/dev/shm" "$r/dev/pts"
			: >"$r/dev/kmsg"
			: >"$r/dev/console"
			mount --bind "$s/console" "$r/dev/console"
			# What procd'"'"'s own early init makes before ubusd starts.
			mkdir -p "$r/tmp/run" "$r/tmp/lock" "$r/tmp/state" "$r/tmp/log"
			# container: procd keeps this /dev (it would mount an empty
			# tmpfs there, for the device nodes of coldplug) and exits at
			# halt, as it does in an LXC or Docker container.
			exec env -i PATH='"$PATH_IN"' container=openwrt-real chroot "$r" /sbin/procd
		' sh "$root" "$(cd "$STATE" && pwd -P)" </dev/null >"$STATE/unshare.log" 2>&1 &
	local upid=$! child=""
	for _ in $(seq 1 100); do
		child=$(tr -d ' ' <"/proc/$upid/task/$upid/children" 2>/dev/null) || true
		if [ -n "$child" ] && [ "$(cat "/proc/$child/comm" 2>/dev/null)" = procd ]; then
			break
		fi
		kill -0 "$upid" 2>/dev/null || die "the namespace did not start: $(cat "$STATE/unshare.log")"
		sleep 0.1
	done
	if [ -z "$child" ] || [ "$(cat "/proc/$child/comm" 2>/dev/null)" != procd ]; then
		die "procd did not start within 10 s: $(cat "$STATE/unshare.log")"
	fi
	echo "$child" >"$STATE/pid"
	# Up: procd on ubus, the boot scripts run (logd and the baseline).
	for _ in $(seq 1 150); do
		if in_root 'ubus -t 1 call service list >/dev/null 2>&1 &&
			ubus -t 1 call log read "{\"lines\":1}" >/dev/null 2>&1 &&
			[ -s /var/run/config.md5 ]' 2>/dev/null; then
			echo "$child"
			return 0
		fi
		sleep 0.2
	done
	echo "--- console:" >&2
	tail -n 30 "$STATE/console" >&2
	die "procd (host PID $child) is up but the system did not finish booting within 30 s"
}

stop_root() {
	local p
	p=$(pid1) || { echo "openwrt-real/boot: $ROOT is not running"; return 0; }
	kill -KILL "$p"
	for _ in $(seq 1 100); do
		[ -d "/proc/$p" ] || { rm -f "$STATE/pid"; return 0; }
		sleep 0.1
	done
	die "PID $p did not end within 10 s"
}

case "$cmd" in
	root) make_root "$@" ;;
	start) start_root ;;
	exec)
		[ "$#" -ge 3 ] || usage
		shift 2
		in_root "$*"
		;;
	shell)
		p=$(pid1) || die "$ROOT is not running"
		exec nsenter -t "$p" -p -m -r -w -- /usr/bin/env -i PATH=$PATH_IN HOME=/root \
			TERM="${TERM:-dumb}" /bin/sh -l
		;;
	pid) pid1 ;;
	stop) stop_root ;;
	*) usage ;;
esac

