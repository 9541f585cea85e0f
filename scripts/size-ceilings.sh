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
# logs, +65,032 / +74,500.
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 2924544 ;; # 2,891,592 at 5ee4d16 (CI run on a fresh clone)
		mips-unknown-linux-musl/nossl) echo 1867776 ;; # 1,849,140 at 5ee4d16 (CI run on a fresh clone)
		armv7-unknown-linux-musleabihf/default) echo 2293760 ;; # 2,268,540 at 5ee4d16 (CI run on a fresh clone)
		aarch64-unknown-linux-musl/default) echo 2535424 ;; # 2,507,456 at 5ee4d16 (CI run on a fresh clone)
		x86_64-unknown-linux-musl/default) echo 2985984 ;; # 2,953,536 at 5ee4d16 (CI run on a fresh clone)
		*) echo "" ;;
	esac
}
