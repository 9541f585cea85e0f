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
# owner's pure step, to 1,869,956 / 2,916,700 (+20,816 / +25,108); then
# the export's own code made smaller (a typed collector host, no copies of
# its target for the pool's calls, no searcher, no rotation of its
# buffers), to 1,864,216 / 2,911,408 (-5,740 / -5,292): the export is
# 58,256 / 68,848 of them (benches/otel-size.sh). Then, to 1,937,884 /
# 2,985,872 (+73,668 / +74,464): the stop's ubus events, the syslog
# timestamp, `validate --json`, the OTLP exporter's state per signal, the
# streamed answers and ubus replies (+33,732 nossl), the config loader that
# reads UCI a section at a time (+11,264), the child check of a large
# reload's file and procd's watchdog pings (+9,664). Then, to 1,977,560 /
# 3,025,392 (+39,676 / +39,520): BFD per neighbor in the owner's loop
# (+30,880 nossl: the core's codec and state machine, now linked, the
# driver, the status and metrics), RFC 8326's GRACEFUL_SHUTDOWN (+4,252),
# the stop's and the stall's timing (+2,364); each commit's message has
# its own figure. Then to 2,000,472 / 3,047,984 (+22,912 / +22,592): a
# drain that waits for the traffic (the conntrack counter and its read on
# the blocking pool, the owner's turn for it, the engine's drains and
# counts, status and metrics).
ceiling_of() { # TARGET FEATURESET
	case "$1/$2" in
		mips-unknown-linux-musl/default) echo 3080192 ;; # 3,047,984 at the commit that set it (scripts/cross-build.sh)
		mips-unknown-linux-musl/nossl) echo 2023424 ;; # 2,000,472 at the commit that set it (scripts/cross-build.sh)
		armv7-unknown-linux-musleabihf/default) echo 2424832 ;; # 2,399,212 at the commit that set it (scripts/cross-build.sh)
		aarch64-unknown-linux-musl/default) echo 2666496 ;; # 2,636,352 at the commit that set it (scripts/cross-build.sh)
		x86_64-unknown-linux-musl/default) echo 3137536 ;; # 3,105,496 at the commit that set it (scripts/cross-build.sh)
		*) echo "" ;;
	esac
}
