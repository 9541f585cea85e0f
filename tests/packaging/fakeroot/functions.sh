#!/bin/sh
# /lib/functions.sh of the fake root used by tests/packaging/ipk_test.sh:
# default_postinst and default_prerm as OpenWrt's base-files has them
# (package/base-files/files/lib/functions.sh), reduced to what a package with
# an init script and no uci-defaults, modules or sysctl files uses. With
# IPKG_INSTROOT set (an image being built) they only enable or disable; on
# the router they also start or stop, and leave the boot links alone while
# PKG_UPGRADE=1.
# The sourced paths exist only in the fake root; word splitting of the file
# list is what OpenWrt's own code does.
# shellcheck disable=SC1090,SC2013

default_postinst() {
	local root="${IPKG_INSTROOT}"
	local pkgname
	pkgname="$(basename "${1%.*}")"
	local filelist="/usr/lib/opkg/info/${pkgname}.list"
	local ret=0 i

	if [ -e "${root}/usr/lib/opkg/info/${pkgname}.postinst-pkg" ]; then
		( . "${root}/usr/lib/opkg/info/${pkgname}.postinst-pkg" )
		ret=$?
	fi
	[ -n "$root" ] || rm -f /tmp/luci-indexcache.*

	for i in $(grep -s "^/etc/init.d/" "$root$filelist"); do
		if [ -n "$root" ]; then
			/bin/sh "$root/etc/rc.common" "$root$i" enable
		else
			if [ "$PKG_UPGRADE" != "1" ]; then
				"$i" enable
			fi
			"$i" start
		fi
	done
	return $ret
}

default_prerm() {
	local root="${IPKG_INSTROOT}"
	local pkgname
	pkgname="$(basename "${1%.*}")"
	local ret=0 i

	if [ -f "$root/usr/lib/opkg/info/${pkgname}.prerm-pkg" ]; then
		( . "$root/usr/lib/opkg/info/${pkgname}.prerm-pkg" )
		ret=$?
	fi

	for i in $(grep -s "^/etc/init.d/" "$root/usr/lib/opkg/info/${pkgname}.list"); do
		if [ -n "$root" ]; then
			/bin/sh "$root/etc/rc.common" "$root$i" disable
		else
			if [ "$PKG_UPGRADE" != "1" ]; then
				"$i" disable
			fi
			"$i" stop
		fi
	done
	return $ret
}
