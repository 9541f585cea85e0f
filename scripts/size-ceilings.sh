# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# (scripts/cross-build.sh, llvm-strip) at the commit named, plus 1 %
# rounded up to 4 KiB. docs/performance.md ("Byte classes and the size
# ceiling", for f834df2 "nossl without ureq", for 4d9fb20 the last
# subsection) has the measurement; docs/openwrt.md repeats the figures.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2981888 ;; # 2,948,932 at 4d9fb20
		mips-unknown-linux-musl/nossl) echo 1941504 ;; # 1,918,540 at 4d9fb20 (no ureq)
		armv7-unknown-linux-musleabihf/default) echo 2355200 ;; # 2,329,716 at 4d9fb20
		*) echo "" ;;
	esac
}
