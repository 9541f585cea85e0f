#!/bin/sh
# /lib/functions.sh of the fake root of tests/packaging/apk_test.sh: the
# package hooks of OpenWrt 25.12's base-files (package/base-files/files/lib/
# functions.sh), reduced to what a package with an init script and no
# uci-defaults, modules, sysctl files, users or alternatives uses.
#
# What 25.12 changed for apk, and what this keeps of it: the package
# scripts export pkgname (apk runs a script from a memfd, so $0 is
# /proc/self/fd/N and says nothing), and the hooks take the file list from
# /lib/apk/packages/$pkgname.list, falling back to opkg's
# /usr/lib/opkg/info/$pkgname.list and to a name taken from $1 as before.
# With IPKG_INSTROOT set (an image being built) they only enable or disable;
# on the router they also start or stop, and leave the boot links alone
# while PKG_UPGRADE=1. tests/packaging/fakeroot/ has the opkg-era version.
# The sourced paths exist only in the fake root; word splitting of the file
# list is what OpenWrt's own code does.
# shellcheck disable=SC2013

_filelist() {
	if [ -f "$root/lib/apk/packages/${pkgname}.list" ]; then
		echo "$root/lib/apk/packages/${pkgname}.list"
	else
		echo "$root/usr/lib/opkg/info/${pkgname}.list"
	fi
}

# Users a package asks for (NAME.rusers): none of the project's packages
# does, and this model creates none, so one that appears must fail the test.
add_group_and_user() {
	if [ -z "$pkgname" ]; then
		local pkgname
		pkgname="$(basename "${1%.*}")"
	fi
	if [ -s "$root/lib/apk/packages/${pkgname}.rusers" ]; then
		echo "add_group_and_user: ${pkgname}.rusers is not modelled" >&2
		return 1
	fi
	return 0
}

default_postinst() {
	local root="${IPKG_INSTROOT}" i
	if [ -z "$pkgname" ]; then
		local pkgname
		pkgname="$(basename "${1%.*}")"
	fi

	[ -n "$root" ] || rm -f /tmp/luci-indexcache.*
	for i in $(grep -s "^/etc/init.d/" "$(_filelist)"); do
		if [ -n "$root" ]; then
			/bin/sh "$root/etc/rc.common" "$root$i" enable
		else
			if [ "$PKG_UPGRADE" != "1" ]; then
				"$i" enable
			fi
			"$i" start
		fi
	done
	return 0
}

default_prerm() {
	local root="${IPKG_INSTROOT}" i
	if [ -z "$pkgname" ]; then
		local pkgname
		pkgname="$(basename "${1%.*}")"
	fi

	for i in $(grep -s "^/etc/init.d/" "$(_filelist)"); do
		if [ -n "$root" ]; then
			/bin/sh "$root/etc/rc.common" "$root$i" disable
		else
			if [ "$PKG_UPGRADE" != "1" ]; then
				"$i" disable
			fi
			"$i" stop
		fi
	done
	return 0
}
