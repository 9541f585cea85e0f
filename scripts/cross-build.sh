#!/usr/bin/env bash
# Cross-builds static musl pathosd binaries for OpenWrt's CPU families on
# Debian 12 with the recipe that docs/openwrt.md ("Without the SDK") explains:
# Debian's rustc-web with its std source
# (-Zbuild-std through RUSTC_BOOTSTRAP), zig as the linker and libc via
# cargo-zigbuild, qemu-user to run the result. Prints each binary's stripped
# size against the budget of its feature set (the size budgets: 2.0 MB =
# 2,097,152 bytes with the default features, 1.5 MB = 1,572,864 bytes with
# --no-default-features, the pathosd-nossl package), "pass" or "FAIL".
#
#   scripts/cross-build.sh                      # all five targets (~15 CPU-minutes)
#   scripts/cross-build.sh x86_64-unknown-linux-musl [...]
#   scripts/cross-build.sh --no-default-features mips-unknown-linux-musl
#
# Each binary is copied to target/cross/out/TARGET/FEATURESET/pathosd
# (FEATURESET: default or nossl), where scripts/build-packages.sh and
# scripts/test-cross.sh take it.
#
# Two size limits per binary:
#   - the budget of its feature set (above): where it must get to;
#   - the ceiling (CEILINGS below, for the targets CI builds): the size
#     last measured on purpose plus 1 %, so that no change makes the
#     binary grow unnoticed while it is still over its budget. A change that
#     needs more must take the bytes from elsewhere, or raise the ceiling in
#     the same commit with the new measured figure and the reason.
# PATHOSD_SIZE_GATE says which of them fail the script:
#   1 (the default, by hand): over the budget or over the ceiling fails;
#   ceiling (CI, while the budgets do not hold): over the ceiling fails, over
#     the budget is reported as "over budget" and goes on;
#   0 (benches/size.sh, which measures): both are reported, neither fails.
# Every other failure (build, not stripped, does not run under qemu) always
# fails.
#
# Next to each stripped binary it keeps the same link with its symbols
# (pathosd.full, v0-mangled names) for benches/size_classes.py.
#
# This is not the OpenWrt SDK build (which links musl dynamically and forces
# panic=unwind, opt-level z): it is a size and portability check, runnable in
# CI time. Outputs stay under target/cross/, apart from host builds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

FEATURE_ARGS=()
FEATURESET=default
LIMIT=2097152
if [ "${1:-}" = --no-default-features ]; then
	FEATURE_ARGS=(--no-default-features)
	FEATURESET=nossl
	LIMIT=1572864
	shift
fi
# PATHOSD_CROSS_FEATURES: more cargo features, for a measurement only
# (benches/otel-size.sh builds with without-otel). Such a binary goes to
# out/TARGET/FEATURESET+FEATURES, and no ceiling holds it.
OUTSET=$FEATURESET
if [ -n "${PATHOSD_CROSS_FEATURES:-}" ]; then
	FEATURE_ARGS+=(--features "$PATHOSD_CROSS_FEATURES")
	OUTSET="$FEATURESET+$PATHOSD_CROSS_FEATURES"
fi
SIZE_GATE=${PATHOSD_SIZE_GATE:-1}
case "$SIZE_GATE" in
	0 | 1 | ceiling) ;;
	*) echo "PATHOSD_SIZE_GATE must be 0, 1 or ceiling, not '$SIZE_GATE'" >&2; exit 2 ;;
esac
# shellcheck source=scripts/size-ceilings.sh
. scripts/size-ceilings.sh
ALL_TARGETS=(
	mips-unknown-linux-musl
	mipsel-unknown-linux-musl
	armv7-unknown-linux-musleabihf
	aarch64-unknown-linux-musl
	x86_64-unknown-linux-musl
)
if [ "$#" -gt 0 ]; then
	TARGETS=("$@")
else
	TARGETS=("${ALL_TARGETS[@]}")
fi

# PATHOSD_CROSS_DIR moves the toolchain venv, CARGO_HOME, target dir and
# out/ elsewhere, e.g. to a cache that outlives the clone (scripts/test-cross.sh).
WORK="${PATHOSD_CROSS_DIR:-$ROOT/target/cross}"
VENV="$WORK/venv"
CONFIG="$WORK/build-std.toml"
mkdir -p "$WORK"

# --- toolchain ----------------------------------------------------------------

# rustc-web (bookworm-security) and rust-web-src always match; not pinned.
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
# llvm: llvm-strip and llvm-readelf, which know every target's ELF (binutils'
# strip knows only the host's).
apt_ensure rustc-web cargo-web rust-web-src qemu-user-static file python3-venv llvm
# -Zbuild-std needs rustc and its std source at the same version, and
# scripts/msrv-check.sh may have put rustc-web back to 1.85: align the
# compiler with the installed rust-web-src.
src_ver=$(dpkg-query -W -f='${Version}' rust-web-src)
if [ "$(dpkg-query -W -f='${Version}' rustc-web)" != "$src_ver" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends --allow-downgrades \
		"rustc-web=$src_ver" "cargo-web=$src_ver" "libstd-rust-web-dev=$src_ver" >/dev/null
fi

if [ ! -x "$VENV/bin/cargo-zigbuild" ]; then
	/usr/bin/python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q 'ziglang==0.17.1' 'cargo-zigbuild==0.24.1'
fi

# Debian's rustc must win over rustup's: its std source matches it exactly.
export PATH="$VENV/bin:/usr/bin:$PATH"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_HOME="$WORK/cargo-home" CARGO_TARGET_DIR="$WORK/target"
unset RUSTUP_TOOLCHAIN RUSTFLAGS CARGO_BUILD_TARGET

# shellcheck source=scripts/qemu.sh
. scripts/qemu.sh

# Passed with --config, so ordinary host builds never rebuild std.
{
	echo '[unstable]'
	echo 'build-std = ["std", "panic_abort"]'
	# std's smaller variants of its own algorithms, same behaviour. The list
	# replaces cargo's default ["panic-unwind", "backtrace", "default"], so
	# std also links no backtrace symbolization (gimli, addr2line, object,
		# miniz_oxide). Together: mips 3,484,032 -> 3,172,780 bytes stripped
	# (-311,252); the backtrace part alone, measured later on other code:
	# 3,389,332 -> 3,175,372 (-213,960). Panics still unwind, as
	# OpenWrt's panic=unwind wants: cargo builds panic_unwind with std and
	# rustc links it as the panic runtime (in the mips binary
	# __rust_start_panic calls _Unwind_RaiseException). The SDK build, which
	# uses the prebuilt std, cannot have any of this.
	echo 'build-std-features = ["optimize_for_size"]'
	# Every target: -Zlocation-detail=none leaves out the file:line:column
	# that each panic site (overflow checks, indexing, unwrap in the crates)
	# carries: a panic still prints its message and unwinds as before, only
	# its location reads "<redacted>". mips default -92,708 bytes
	# (3,175,372 -> 3,082,664, before llvm-strip), nossl -66,760
	# (2,358,580 -> 2,291,820). The SDK build (stable rustc, no -Z) keeps
	# the locations.
	loc='"-Zlocation-detail=none"'
	for t in "${ALL_TARGETS[@]}"; do
		echo
		echo "[target.$t]"
		case "$t" in
			# Without +crt-static zig emits a static-pie in which std's weak
			# getrandom resolves to the load base (SIGSEGV at start-up).
			mips-* | mipsel-*)
				echo "rustflags = [\"-Clink-self-contained=no\", \"-Ctarget-feature=+crt-static\", \"-Crelocation-model=static\", $loc]" ;;
			# -Clink-self-contained=no, without it: "failed to open object
			# rcrt1.o".
			*) echo "rustflags = [\"-Clink-self-contained=no\", $loc]" ;;
		esac
		echo "runner = \"$(qemu_of "$t")\""
	done
} >"$CONFIG"

# The functions a running pathosd executes go first, together
# (scripts/hot-text.py says why: ≈ 1 MB less RSS on x86_64). Copied under a
# name that holds its hash: cargo does not see the file, but it does see the
# link argument change, and relinks.
HOT_TEXT="$WORK/hot-text-$(sha256sum scripts/hot-text.ld | cut -c 1-16).ld"
cp scripts/hot-text.ld "$HOT_TEXT"
HOT_TEXT_BYTES=$(sed -n 's/.* functions, \([0-9]*\) bytes of code.*/\1/p' scripts/hot-text.ld)

echo "rustc: $(rustc --version)"
echo "cargo-zigbuild: $(cargo-zigbuild --version 2>/dev/null || echo '?')"
VERSION=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)

# --- build, measure, smoke-test -------------------------------------------------

fail=0
results=()
for t in "${TARGETS[@]}"; do
	qemu=$(qemu_of "$t")
	start=$(date +%s)
	# `cargo-zigbuild rustc` (cargo rustc) with the same profile: the extra flags reach only the
	# final link (no other crate is rebuilt for them) and change no code:
	# the linker keeps the symbol table (v0-mangled, so a generic
	# instantiation names the type it is for) for size_classes.py, and
	# llvm-strip below gives the same stripped bytes as a `strip = true`
		# link (2,944,324 both, for a mips default build).
	if ! cargo-zigbuild rustc --config "$CONFIG" --locked --release --target "$t" --bin pathosd \
		"${FEATURE_ARGS[@]}" -- -Cstrip=none -Csymbol-mangling-version=v0 \
		"-Clink-arg=-Wl,-T,$HOT_TEXT"; then
		results+=("$t: BUILD FAILED")
		fail=1
		continue
	fi
	secs=$(($(date +%s) - start))
	# Copied out: the other feature set's build overwrites release/pathosd.
	out_dir="$WORK/out/$t/$OUTSET"
	mkdir -p "$out_dir"
	cp "$CARGO_TARGET_DIR/$t/release/pathosd" "$out_dir/pathosd"
	cp "$CARGO_TARGET_DIR/$t/release/pathosd" "$out_dir/pathosd.full"
	bin="$out_dir/pathosd"
	# [profile.release] strip = true makes the linker drop the symbols, but
	# it keeps the sections no segment loads. On mips that leaves LLVM's
	# .pdr (procedure descriptors for IRIX-era debuggers, never read at run
	# time): 8 % of the file. llvm-strip removes it and .comment; measured
	# 2026-12-01 on mips, same code: default 3,175,372 -> 2,928,420 bytes
	# (-246,952), nossl 2,358,580 -> 2,164,268 (-194,312); other targets
	# lose ~100 bytes (.comment). Binutils' strip --strip-all (the OpenWrt
	# SDK's) keeps .pdr.
	llvm-strip --strip-all "$bin"
	desc=$(file -b "$bin")
	size=$(stat -c %s "$bin")
	gz=$(gzip -9 -c "$bin" | wc -c)
	line="$t: $size bytes stripped ($((size / 1024)) KiB, gzip -9 $gz), ${secs}s"
	case "$desc" in
		*", stripped"*) ;;
		*) line="$line, NOT STRIPPED"; fail=1 ;;
	esac
	if llvm-readelf -S -W "$bin" | grep -q ' \.pdr '; then
		line="$line, .pdr NOT REMOVED"
		fail=1
	fi
	# scripts/hot-text.ld names the functions by their symbols: if few of
	# them match (a toolchain that names them otherwise, a stale list), the
	# code they name is spread over .text again and the RSS of a running
	# daemon doubles, with no other sign. Half of the list's bytes is the
	# floor (Thumb code is smaller than x86_64's, mips code larger).
	hot=$(llvm-readelf -S -W "$bin" | sed -n 's/.* \.text\.hot  *PROGBITS  *[0-9a-f]*  *[0-9a-f]*  *\([0-9a-f]*\) .*/\1/p')
	[ -z "$hot" ] || hot=$((16#$hot))
	if [ -z "$hot" ] || [ "$hot" -lt $((HOT_TEXT_BYTES / 2)) ]; then
		line="$line, FAIL: .text.hot holds ${hot:-no} bytes of scripts/hot-text.ld's $HOT_TEXT_BYTES (regenerate it: benches/hot-text.sh)"
		fail=1
	else
		line="$line, .text.hot $hot bytes"
	fi
	# Half of the bytes is a coarse floor: 30 stale entries (a copy's
	# numeric suffix that moved) passed it and cost 192 KiB of RSS. On the
	# build the list is recorded from (benches/hot-text.sh: x86_64, default
	# features), every entry must name a function of this link
	# (scripts/hot-text-check.py). Not on the others: the nossl build has
	# no TLS code, and each CPU inlines its own way (mips nossl: 163 of
	# 1,613 entries name nothing there, and place nothing, harmlessly).
	if [ "$t/$OUTSET" = x86_64-unknown-linux-musl/default ]; then
		if hot_check=$(python3 scripts/hot-text-check.py "$out_dir/pathosd.full" scripts/hot-text.ld 2>&1); then
			line="$line, every hot-text entry matches"
		else
			line="$line, FAIL: ${hot_check%%$'\n'*}"
			printf '%s\n' "$hot_check" >&2
			fail=1
		fi
	fi
	if [ "$size" -gt "$LIMIT" ]; then
		if [ "$SIZE_GATE" = 1 ]; then
			line="$line, FAIL: over the $FEATURESET budget of $LIMIT bytes"
			fail=1
		else
			line="$line, over the $FEATURESET budget of $LIMIT bytes by $((size - LIMIT))"
		fi
	else
		line="$line, pass: within the $FEATURESET budget of $LIMIT bytes"
	fi
	ceiling=$(ceiling_of "$t" "$OUTSET")
	if [ -z "$ceiling" ]; then
		line="$line, no ceiling for $t $OUTSET"
	elif [ "$size" -gt "$ceiling" ]; then
		line="$line, FAIL: over its ceiling of $ceiling bytes by $((size - ceiling)) (it grew: take the bytes back or raise the ceiling with the measured figure)"
		[ "$SIZE_GATE" = 0 ] || fail=1
	else
		line="$line, pass: within its ceiling of $ceiling bytes"
	fi
	# The binary starts on its CPU (under qemu), knows its version and
	# whether it has TLS.
	if [ "$FEATURESET" = nossl ]; then want_features="features: -tls"; else want_features="features: +tls"; fi
	if out=$("$qemu" "$bin" --version 2>&1) &&
		[ "$out" = "pathosd $VERSION
$want_features" ]; then
		line="$line, runs under $qemu"
	else
		line="$line, DOES NOT RUN under $qemu: $out"
		fail=1
	fi
	results+=("$line")
	echo "$line"
	echo "  $desc"
done

echo
case "$SIZE_GATE" in
	0) gate="off: over budget or ceiling is reported, not failed" ;;
	ceiling) gate="ceiling: over the ceiling fails, over budget is reported" ;;
	*) gate="on: over budget or ceiling fails" ;;
esac
echo "pathosd $VERSION, $FEATURESET features, budget $LIMIT bytes (size gate $gate):"
printf '  %s\n' "${results[@]}"
exit "$fail"
