# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# by scripts/cross-build.sh (llvm-strip) when a change last moved it on
# purpose, plus 1 % rounded up to 4 KiB. docs/performance.md ("The size
# ceiling") has the rule, docs/openwrt.md ("Sizes") the current size of
# every binary and package. A change that needs more bytes raises the
# ceiling here with its measured size, and its commit message says what
# the bytes bought; `git log -p scripts/size-ceilings.sh` is the history.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 3108864 ;; # 3,076,144 measured (scripts/cross-build.sh)
		mips-unknown-linux-musl/nossl) echo 2056192 ;; # 2,035,768 measured (scripts/cross-build.sh)
		armv7-unknown-linux-musleabihf/default) echo 2453504 ;; # 2,428,172 measured (scripts/cross-build.sh)
		aarch64-unknown-linux-musl/default) echo 2699264 ;; # 2,670,016 measured (scripts/cross-build.sh)
		x86_64-unknown-linux-musl/default) echo 3174400 ;; # 3,142,232 measured (scripts/cross-build.sh)
		*) echo "" ;;
	esac
}
