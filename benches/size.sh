#!/usr/bin/env bash
# Binary size of pathosd per target and per feature set, against its budget
# and against BIRD, as ratios measured in the same run:
#
#   benches/size.sh                       # the host (x86_64) release build
#   benches/size.sh mips-unknown-linux-musl [...]   # plus these cross builds
#
# Feature sets: "default" (TLS, package pathosd; budget 2.0 MB = 2,097,152
# bytes) and "nossl" (--no-default-features, package pathosd-nossl; budget
# 1.5 MB = 1,572,864 bytes), the size budgets for the stripped static
# mipsel binary. For each build: bytes stripped, bytes after xz -9 (how it
# sits in a squashfs/JFFS2 image, roughly), and the ratios. Then, for the host
# builds, the largest crates by the bytes of their functions (`nm` on the
# unstripped binary, symbols grouped by the crate their path starts with:
# cargo bloat's --crates, without installing cargo-bloat).
#
# Then the resident memory with one VIP: the x86_64 static musl build of
# scripts/cross-build.sh (the kind of binary a router runs, whose own pages
# are most of its RSS) with one `always` VIP and one neighbor, against
# Debian's BIRD with one static route, both peering with a router BIRD on
# 127.163.0.1 and measured in the same run: VmRSS once the router has the
# route, the ratio to BIRD's and to the RSS target, 2.4 MB = 2,457 KiB
# (which is also "half of BIRD's": BIRD holds ≈ 4.8 MB). Addresses
# 127.163.0.1-3, port 1179 + $$ % 800; every process is stopped by PID.
#
# The RSS is measured RSS_RUNS times (3 by default; the shared machine is
# noisy and fault-around makes the figure move by 64 KiB windows): a fresh
# router, pathosd and BIRD each time, each run's figures printed, then the
# range.
#
# Knobs (environment): RSS_RUNS=N; RSS_ONLY=1 (no size builds, only the RSS
# part); PATHOSD=FILE (measure this static pathosd instead of building
# cross-build.sh's, e.g. an older build in the same hour); CROSS_LOCK=FILE
# (run each scripts/cross-build.sh under `flock FILE`, so that it never runs
# next to another one on a shared machine, and only while it builds).
#
# For each cross build, its byte classes (benches/size_classes.py on the
# unstripped link that scripts/cross-build.sh keeps): std, TLS, ureq, serde_json,
# smol/async-io, simple-dns, nom, regex-lite, pathosd-core, pathosd src/,
# libc and libunwind, unwind tables, rodata, the rest; they add up to the
# stripped file's bytes.
#
# The host build uses the release profile (OpenWrt's flags: opt-level z, fat
# LTO, panic=unwind, overflow checks); cross builds come from
# scripts/cross-build.sh (static musl; its size gate, budget and ceiling, is
# turned off here: this script measures, it does not judge).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# shellcheck source=benches/lib.sh
. benches/lib.sh
birdc=birdc
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-size.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT

BUDGET_default=2097152
BUDGET_nossl=1572864
BIRD=$(command -v bird || echo /usr/sbin/bird)
bird_size=$(stat -c %s "$BIRD" 2>/dev/null || echo 0)
OUT=target/size
mkdir -p "$OUT"

RSS_RUNS=${RSS_RUNS:-3}
RSS_ONLY=${RSS_ONLY:-0}
case "$RSS_RUNS" in
	[1-9] | [1-9][0-9]) ;;
	*) echo "RSS_RUNS must be 1 to 99, not '$RSS_RUNS'" >&2; exit 2 ;;
esac
cross_build() { # cross-build.sh's arguments
	if [ -n "${CROSS_LOCK:-}" ]; then
		PATHOSD_SIZE_GATE=0 flock "$CROSS_LOCK" bash scripts/cross-build.sh "$@"
	else
		PATHOSD_SIZE_GATE=0 bash scripts/cross-build.sh "$@"
	fi
}

rows=()
classes=()
row() { # TARGET SET FILE
	local size xz budget
	size=$(stat -c %s "$3")
	xz=$(xz -9 -c "$3" | wc -c)
	budget=$([ "$2" = nossl ] && echo "$BUDGET_nossl" || echo "$BUDGET_default")
	rows+=("$(printf '%-32s %-8s %10d %9d %9s %8s %8s' "$1" "$2" "$size" "$xz" "$budget" \
		"$(awk -v a="$size" -v b="$budget" 'BEGIN { printf "%.2f", a / b }')" \
		"$(awk -v a="$size" -v b="$bird_size" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')")")
}

# Per-crate bytes of the functions in an unstripped binary.
crates() { # FILE
	nm -C -S --size-sort --radix=d "$1" 2>/dev/null | awk '
		$3 ~ /^[tTwW]$/ {
			name = $0
			sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", name)
			sub(/^(<|&|\*const |\*mut |mut |dyn )+/, "", name)
			c = name
			if (index(c, "::") > 0) c = substr(c, 1, index(c, "::") - 1); else c = "(C or unnamed)"
			sub(/<.*/, "", c)
			bytes[c] += $2; total += $2
		}
		END {
			for (c in bytes) printf "%10d %5.1f%%  %s\n", bytes[c], 100 * bytes[c] / total, c
			printf "%10d 100.0%%  (all functions)\n", total
		}' | sort -rn | head -n 16
}

host_sets=(default nossl)
targets=("$@")
if [ "$RSS_ONLY" = 1 ]; then
	host_sets=()
	targets=()
fi
for set in "${host_sets[@]}"; do
	args=()
	[ "$set" = nossl ] && args=(--no-default-features)
	# Unstripped, for the crate table; stripped with strip(1) for the size
	# (the release profile's strip = true gives the same bytes within a few).
	CARGO_PROFILE_RELEASE_STRIP=false cargo build --release --locked --quiet --bin pathosd \
		--target-dir target/size-unstripped "${args[@]}"
	cp target/size-unstripped/release/pathosd "$OUT/pathosd-host-$set.full"
	strip -o "$OUT/pathosd-host-$set" "$OUT/pathosd-host-$set.full"
	row "x86_64 (host, glibc)" "$set" "$OUT/pathosd-host-$set"
	printf -v "crates_$set" '%s' "$(crates "$OUT/pathosd-host-$set.full")"
done

for t in "${targets[@]}"; do
	for set in default nossl; do
		args=()
		[ "$set" = nossl ] && args=(--no-default-features)
		cross_build "${args[@]}" "$t" >"$OUT/cross-$t-$set.log" 2>&1 ||
			{ echo "cross build $t $set failed: $OUT/cross-$t-$set.log" >&2; exit 1; }
		bin="${PATHOSD_CROSS_DIR:-target/cross}/out/$t/$set/pathosd"
		row "$t" "$set" "$bin"
		classes+=("$t, $set:" "$(python3 benches/size_classes.py "$bin.full" "$bin")")
	done
done

# --- RSS with one VIP, against BIRD in the same run --------------------------

RSS_TARGET_KIB=2457 # 2.4 MB, the RSS target with one VIP
musl=x86_64-unknown-linux-musl
if [ -n "${PATHOSD:-}" ]; then
	musl_bin=$PATHOSD
	musl_desc="given as PATHOSD"
	[ -x "$musl_bin" ] || { echo "PATHOSD=$musl_bin is not an executable file" >&2; exit 1; }
else
	cross_build "$musl" >"$OUT/cross-$musl-rss.log" 2>&1 ||
		{ echo "cross build $musl failed: $OUT/cross-$musl-rss.log" >&2; exit 1; }
	musl_bin="${PATHOSD_CROSS_DIR:-target/cross}/out/$musl/default/pathosd"
	musl_desc="$musl, static"
fi
net=127.163.0
port=$((1179 + $$ % 800))
mkdir -p "$tmp/router" "$tmp/pathosd" "$tmp/bird"
# What runs is a fresh copy (cp: 128 KiB writes). The same bytes as
# llvm-strip's output file, which it writes in one piece, measured up to
# 512 KiB more in some runs (1,392-1,916 KiB against 1,268-1,404 for a
# copy, 2026-12-01, rss8): on this kernel ext4 keeps such a file in large
# page-cache folios, and a fault maps a whole folio, not fault-around's 64
# KiB. That is the build host's page cache, not the binary; on a router the
# binary sits on squashfs or JFFS2/UBIFS, in 4 KiB pages.
cp "$musl_bin" "$tmp/pathosd/pathosd"
musl_run="$tmp/pathosd/pathosd"
router_bird_conf "$net" "$port" from_pathosd 2 65001 from_bird 3 65002 >"$tmp/router/bird.conf"
one_neighbor_config "$net" "$port" \
	'{ "name": "v1", "prefix": "10.163.2.1/32", "always": true }' >"$tmp/pathosd/pathosd.json"
cat >"$tmp/bird/bird.conf" <<EOF
router id $net.3;
protocol device { }
protocol static { ipv4; route 10.163.3.1/32 blackhole; }
protocol bgp upstream {
  local $net.3 port $port as 65002; neighbor $net.1 port $port as 65000;
  multihop; strict bind on; connect delay time 0; connect retry time 1;
  ipv4 { import none; export all; };
}
EOF
# rss_kib NAME PREFIX PID: VmRSS in KiB once the router has PREFIX (10 s at
# most; then the run fails: a figure of a daemon that never announced would
# mean nothing).
rss_kib() {
	local _
	for _ in $(seq 1 200); do
		if "$birdc" -s "$tmp/router/bird.ctl" show route "$2" 2>/dev/null | grep -q "^$2"; then
			# After the route: the start-up work is done, the daemon idles.
			# VmRSS, then its parts: anonymous (heap, stacks) and file-backed
			# (the binary's and the libraries' pages).
			awk '/^(VmRSS|RssAnon|RssFile):/ { v[$1] = $2 } END { print v["VmRSS:"], v["RssAnon:"], v["RssFile:"] }' "/proc/$3/status"
			return 0
		fi
		alive "$3" || break
		sleep 0.05
	done
	echo "$1 did not announce $2 within 10 s" >&2
	return 1
}
rss_lines=()
rss_logs=()
for run in $(seq 1 "$RSS_RUNS"); do
	# Each run from scratch, the router too: a router that has just lost
	# the last run's session may refuse the next connection for a while,
	# and a reconnecting pathosd runs (and maps) code an idle one does not.
	"$BIRD" -f -c "$tmp/router/bird.conf" -s "$tmp/router/bird.ctl" -P "$tmp/router/bird.pid" 2>"$tmp/router/log" &
	pids+=("$!")
	wait_ctl "$tmp/router/bird.ctl"
	"$musl_run" run --config "$tmp/pathosd/pathosd.json" >/dev/null 2>"$tmp/pathosd/log" &
	pd_pid=$!
	pids+=("$pd_pid")
	"$BIRD" -f -c "$tmp/bird/bird.conf" -s "$tmp/bird/bird.ctl" -P "$tmp/bird/bird.pid" 2>"$tmp/bird/log" &
	bird_pid=$!
	pids+=("$bird_pid")
	pd_m=$(rss_kib "pathosd ($musl)" 10.163.2.1/32 "$pd_pid") || { cat "$tmp/pathosd/log" >&2; exit 1; }
	bird_m=$(rss_kib BIRD 10.163.3.1/32 "$bird_pid") || { cat "$tmp/bird/log" >&2; exit 1; }
	# run, then pathosd's and BIRD's VmRSS, anonymous, file-backed, and
	# how many lines pathosd had logged by then (warnings: it ran more than
	# the idle path, e.g. a refused connection; the figure is then not the
	# idle one). Read before the stop, whose Cease is logged too.
	rss_lines+=("$run $pd_m $bird_m $(wc -l <"$tmp/pathosd/log")")
	[ -s "$tmp/pathosd/log" ] && rss_logs+=("run $run: $(head -n 1 "$tmp/pathosd/log" | cut -c 1-200)")
	cleanup_pids
done
cleanup_pids

if [ "${#rows[@]}" -gt 0 ]; then
	printf '%-32s %-8s %10s %9s %9s %8s %8s\n' target features stripped "xz -9" budget /budget /BIRD
	printf '%s\n' "${rows[@]}"
	echo "BIRD: $BIRD, $bird_size bytes (Debian, dynamically linked)"
	echo
fi
echo "RSS with one VIP and one neighbor, KiB (VmRSS once the router has the route), $RSS_RUNS runs:"
echo "  pathosd: $musl_bin ($musl_desc), 1 always VIP"
echo "  BIRD $("$BIRD" --version 2>&1 | awk '{ print $NF }') (dynamic), 1 static route"
printf '%s\n' "${rss_lines[@]}" | awk -v t="$RSS_TARGET_KIB" '
	{
		# $2-$4 pathosd VmRSS, anonymous, file-backed; $5-$7 BIRD the
		# same; $8 the lines pathosd logged
		r = $2 / $5
		printf "  run %d: pathosd %d KiB (anonymous %d, file-backed %d), BIRD %d KiB (anonymous %d, file-backed %d), pathosd / BIRD %.2f, / 2.4 MB %.2f: %s%s\n",
			$1, $2, $3, $4, $5, $6, $7, r, $2 / t, ($2 <= t && $2 <= $5 / 2) ? "pass" : "FAIL",
			($8 > 0) ? sprintf(" (pathosd logged %d lines: not only the idle path)", $8) : ""
		if (NR == 1 || $2 < pmin) pmin = $2
		if (NR == 1 || $2 > pmax) pmax = $2
		if (NR == 1 || $5 < bmin) bmin = $5
		if (NR == 1 || $5 > bmax) bmax = $5
		if (NR == 1 || r < rmin) rmin = r
		if (NR == 1 || r > rmax) rmax = r
		if (!($2 <= t && $2 <= $5 / 2)) failed++
	}
	END {
		printf "  pathosd %d-%d KiB, BIRD %d-%d KiB, pathosd / BIRD %.2f-%.2f (target <= 0.50 and <= %d KiB): %s\n",
			pmin, pmax, bmin, bmax, rmin, rmax, t, failed ? "FAIL in " failed " of " NR " runs" : "pass in every run"
	}'
[ "${#rss_logs[@]}" -eq 0 ] || printf '  pathosd logged, %s\n' "${rss_logs[@]}"
echo
# Byte classes of each cross build (benches/size_classes.py: .text by the
# crate owning each function, generics instantiated for pathosd's types
# counted for pathosd; the unwind tables, .rodata and the rest), summing to
# the stripped file; docs/performance.md ("Byte classes") says what they mean.
for ((i = 0; i < ${#classes[@]}; i += 2)); do
	echo "byte classes, ${classes[i]}"
	echo "${classes[i + 1]}"
	echo
done
[ "$RSS_ONLY" = 1 ] && exit 0
echo "largest crates, host build, default features (bytes of functions):"
# shellcheck disable=SC2154 # set through printf -v above
echo "$crates_default"
echo
echo "largest crates, host build, --no-default-features:"
# shellcheck disable=SC2154
echo "$crates_nossl"
