# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# (scripts/cross-build.sh, llvm-strip) at the commit named, plus 1 %
# rounded up to 4 KiB. docs/performance.md ("Byte classes and the size
# ceiling") has the measurement; docs/openwrt.md repeats the figures.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2940928 ;; # 2,909,124 at 99b34f7
		mips-unknown-linux-musl/nossl) echo 2191360 ;; # 2,168,296 at 99b34f7
		armv7-unknown-linux-musleabihf/default) echo 2326528 ;; # 2,301,148 at 99b34f7
		*) echo "" ;;
	esac
}
