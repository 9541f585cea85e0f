#!/bin/sh
# OpenWrt CI runtime test: $1 is the package name, $2 its version.

case "$1" in
	pathosd)
		pathosd --version 2>&1 | grep -F "$2"
		;;
esac
