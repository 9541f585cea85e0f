# shellcheck shell=bash
# The size ceilings of scripts/cross-build.sh (sourced by it and by
# scripts/test-packaging.sh's check that every binary CI builds has one).
#
# Ceilings in stripped bytes, per target and feature set: the size measured
# (scripts/cross-build.sh, llvm-strip) at the commit named, plus 1 %
# rounded up to 4 KiB. docs/performance.md ("The size ceiling") has the
# rule; docs/openwrt.md ("Sizes") the current sizes of every binary and
# package, from the run named in each comment. What moved them last, on
# mips (nossl / default, stripped bytes, from 1,745,492 / 2,778,988 at
# c7b995e): paged ubus status and `validate`, run types, one reload
# walker, typed channels and hostname lookups on the pool, to 1,784,108 /
# 2,817,092 at e32dea6 (+38,616 / +38,104; the clarity work's limit was
# 1,800,000 / 2,850,000); then the OTLP export of metrics, traces and
# logs, +65,032 / +74,500 at 5ee4d16; then its queue per signal, last
# export of every signal, OTLP/gRPC, server spans and pool turns, and the
# owner's pure step, to 1,869,956 / 2,916,700 (+20,816 / +25,108).
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2949120 ;; # 2,916,700 at 15f26af (scripts/test-cross.sh)
		mips-unknown-linux-musl/nossl) echo 1892352 ;; # 1,869,956 at 15f26af (scripts/test-cross.sh)
		armv7-unknown-linux-musleabihf/default) echo 2318336 ;; # 2,291,748 at 6cf8d3b (scripts/test-cross.sh)
		aarch64-unknown-linux-musl/default) echo 2555904 ;; # 2,530,112 at 6cf8d3b (scripts/test-cross.sh)
		x86_64-unknown-linux-musl/default) echo 3014656 ;; # 2,983,888 at 6cf8d3b (scripts/test-cross.sh)
		*) echo "" ;;
	esac
}
