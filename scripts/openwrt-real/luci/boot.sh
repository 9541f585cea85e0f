#!/usr/bin/env bash
# A root of ../boot.sh with LuCI's server side (./build.sh) added, booted as
# ../boot.sh boots it: procd as PID 1, logd, rpcd (now with its ucode plugin
# host, which runs luci-base's `luci` object) and uhttpd as procd services.
#
#   scripts/openwrt-real/luci/boot.sh root ROOT OUT SRC [LISTEN]   # (re)make ROOT
#   scripts/openwrt-real/luci/boot.sh start|exec|shell|pid|stop ROOT ...   # as ../boot.sh
#
# LISTEN is uhttpd's address and port (default 127.89.0.3:8080; the root
# shares the host's network namespace). The root adds to ../boot.sh's:
#   * OUT/luci-root (./build.sh): ucode and its modules, rpcd's ucode.so,
#     uhttpd and its plugins, lucihttp, luci-base, luci-mod-status,
#     luci-theme-bootstrap; the Debian libraries they need; the
#     uci-defaults of those packages run once (the theme's), as OpenWrt's
#     first boot runs them;
#   * what OpenWrt's rpcd and uhttpd packages ship besides the programs:
#     /etc/config/rpcd (the root login, `$p$root`: the password of root in
#     /etc/shadow), /usr/share/rpcd/acl.d/unauthenticated.json (session
#     access and login), rpcd's init script (with its reload: SIGHUP), and
#     /etc/init.d/uhttpd: a procd service with the
#     command line OpenWrt's uhttpd init script makes of the default
#     /etc/config/uhttpd (`-f -h /www -r openwrt-real -x /cgi-bin -o
#     /cgi-bin/luci -O /usr/share/ucode/luci/uhttpd.uc -u /ubus -t 60 -T 30
#     -k 20 -A 1 -N 100 -R`), except: one address (LISTEN), no TLS, and `-n 1`
#     instead of `-n 3` (UHTTPD_SCRIPTS sets it): with three script workers
#     two overlapping /cgi-bin/luci requests hang until the 60 s script
#     timeout (uhttpd's ucode handler makes the dispatcher's ubus connection
#     in the parent, and the forked workers share it);
#   * opkg's status lists the packages laid out here (luci-base, rpcd,
#     uhttpd, ucode ...), so that luci-app-pathosd's dependencies hold;
#   * root's password is empty until a caller sets one
#     (`boot.sh exec ROOT 'echo root:PW | chpasswd'` or /etc/shadow).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BOOT="$HERE/../boot.sh"

die() { echo "openwrt-real/luci/boot: $*" >&2; exit 1; }
[ "$#" -ge 2 ] || { sed -n '6,7p' "$0" >&2; exit 2; }
[ "$1" = root ] || exec bash "$BOOT" "$@"

[ "$#" -ge 4 ] || { sed -n '6p' "$0" >&2; exit 2; }
ROOT=${2%/}
OUT=$(cd "$3" && pwd) || die "no OUT $3"
SRC=$4
LISTEN=${5:-127.89.0.3:8080}
LR="$OUT/luci-root"
if [ ! -x "$LR/usr/sbin/uhttpd" ] || [ ! -f "$LR/usr/share/ucode/luci/dispatcher.uc" ]; then
	die "no LuCI in $LR: run ./build.sh $SRC $OUT first"
fi

bash "$BOOT" root "$ROOT" "$OUT" "$SRC" >/dev/null
(cd "$LR" && tar --exclude=./usr/include -cf - .) | (cd "$ROOT" && tar -xf -)

# The Debian libraries of what was added (OUT's are in /lib already).
{
	find "$ROOT/usr/sbin/uhttpd" "$ROOT/usr/bin/ucode" "$ROOT/usr/lib" -maxdepth 3 \
		\( -name '*.so*' -o -name uhttpd -o -name ucode \) -type f
} | while read -r f; do
	LD_LIBRARY_PATH="$ROOT/lib:$ROOT/usr/lib" ldd "$f" 2>/dev/null |
		sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p' || true
done | sort -u | while read -r lib; do
	case "$lib" in "$ROOT"/*) continue ;; esac
	[ -e "$ROOT$lib" ] && continue
	mkdir -p "$ROOT$(dirname "$lib")"
	cp -L "$lib" "$ROOT$lib"
done
ldconfig -r "$ROOT"

# OpenWrt's rpcd package: its config and the unauthenticated ACL.
cat >"$ROOT/etc/config/rpcd" <<'EOF'
config rpcd
	option socket /var/run/ubus/ubus.sock
	option timeout 30

config login
	option username 'root'
	option password '$p$root'
	list read '*'
	list write '*'
EOF
mkdir -p "$ROOT/usr/share/rpcd/acl.d"
cat >"$ROOT/usr/share/rpcd/acl.d/unauthenticated.json" <<'EOF'
{
	"unauthenticated": {
		"description": "Access controls for unauthenticated requests",
		"read": {
			"ubus": {
				"session": [
					"access",
					"login"
				]
			}
		}
	}
}
EOF

# OpenWrt's rpcd init script (../boot.sh's has no reload): luci.mk's
# postinst, which luci-app-pathosd has, runs /etc/init.d/rpcd reload so that
# rpcd (SIGHUP: it execs itself) finds the new exec plugins.
cat >"$ROOT/etc/init.d/rpcd" <<'EOF'
#!/bin/sh /etc/rc.common

START=12

USE_PROCD=1
NAME=rpcd
PROG=/sbin/rpcd

start_service() {
	local socket=$(uci -q get rpcd.@rpcd[0].socket)
	local timeout=$(uci -q get rpcd.@rpcd[0].timeout)

	procd_open_instance
	procd_set_param command "$PROG" ${socket:+-s "$socket"} ${timeout:+-t "$timeout"}
	procd_set_param respawn 3600 1 0
	procd_close_instance
}

reload_service() {
	procd_send_signal rpcd
}
EOF

cat >"$ROOT/etc/init.d/uhttpd" <<EOF
#!/bin/sh /etc/rc.common

START=50
STOP=50
USE_PROCD=1

start_service() {
	procd_open_instance
	procd_set_param command /usr/sbin/uhttpd -f -h /www -r openwrt-real -x /cgi-bin \\
		-o /cgi-bin/luci -O /usr/share/ucode/luci/uhttpd.uc -u /ubus \\
		-t 60 -T 30 -k 20 -A 1 -n ${UHTTPD_SCRIPTS:-1} -N 100 -R -p $LISTEN
	procd_set_param respawn
	procd_close_instance
}
EOF
chmod 0755 "$ROOT/etc/init.d/uhttpd"
ln -sf ../init.d/uhttpd "$ROOT/etc/rc.d/S50uhttpd"

# The packages' uci-defaults, once (OpenWrt's boot runs and removes them).
for f in "$ROOT"/etc/uci-defaults/*; do
	[ -e "$f" ] || continue
	chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh "/etc/uci-defaults/${f##*/}" >/dev/null ||
		die "uci-defaults ${f##*/} failed"
	rm -f "$f"
done

for p in ucode libucode ucode-mod-fs ucode-mod-uci ucode-mod-ubus ucode-mod-log ucode-mod-html \
	liblucihttp liblucihttp-ucode rpcd rpcd-mod-file rpcd-mod-ucode uhttpd uhttpd-mod-ubus \
	luci-base luci-mod-status luci-theme-bootstrap; do
	printf 'Package: %s\nVersion: 1\nStatus: install user installed\nArchitecture: x86_64\nInstalled-Time: 0\n\n' "$p"
done >>"$ROOT/usr/lib/opkg/status"
echo "openwrt-real/luci/boot: made $ROOT (uhttpd on $LISTEN)"
