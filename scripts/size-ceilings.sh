# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# (scripts/cross-build.sh, llvm-strip) at the commit named, plus 1 %
# rounded up to 4 KiB. docs/performance.md ("Byte classes and the size
# ceiling", and for f834df2 "nossl without ureq") has the measurement;
# docs/openwrt.md repeats the figures.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2953216 ;; # 2,920,964 at f834df2
		mips-unknown-linux-musl/nossl) echo 1908736 ;; # 1,889,740 at f834df2 (no ureq)
		armv7-unknown-linux-musleabihf/default) echo 2334720 ;; # 2,309,172 at f834df2
		*) echo "" ;;
	esac
}
