# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# (scripts/cross-build.sh, llvm-strip) at the commit named, plus 1 %
# rounded up to 4 KiB. docs/performance.md ("The size ceiling") has the
# rule and "Binary size" the current sizes; the measurement behind each
# line (its commit in the comment) is in that file's history up to
# 792d6be (`git show 792d6be:docs/performance.md`); for aarch64 and
# x86_64, their first one when CI began to build them (docs/testing.md,
# "Cross builds, packages and the BGP smoke under qemu");
# docs/openwrt.md repeats the figures.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2809856 ;; # 2,778,988 at c7b995e (branch size10)
		mips-unknown-linux-musl/nossl) echo 1765376 ;; # 1,745,492 at c7b995e (branch size10)
		armv7-unknown-linux-musleabihf/default) echo 2220032 ;; # 2,196,996 at 57833e9 (CI)
		aarch64-unknown-linux-musl/default) echo 2473984 ;; # 2,446,528 at 5f5c47a (scripts/test-cross.sh)
		x86_64-unknown-linux-musl/default) echo 2908160 ;; # 2,878,168 at fa4889d (scripts/cross-build.sh; src unchanged to 5f5c47a)
		*) echo "" ;;
	esac
}
