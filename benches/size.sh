#!/usr/bin/env bash
# Binary size of pathosd per target and per feature set, against its budget
# and against BIRD, as ratios measured in the same run:
#
#   benches/size.sh                       # the host (x86_64) release build
#   benches/size.sh mips-unknown-linux-musl [...]   # plus these cross builds
#
# Feature sets: "default" (TLS, package pathosd; budget 2.0 MB = 2,097,152
# bytes) and "nossl" (--no-default-features, package pathosd-nossl; budget
# 1.5 MB = 1,572,864 bytes), the budgets of issue 12 for the stripped static
# mipsel binary. For each build: bytes stripped, bytes after xz -9 (how it
# sits in a squashfs/JFFS2 image, roughly), and the ratios. Then, for the host
# builds, the largest crates by the bytes of their functions (`nm` on the
# unstripped binary, symbols grouped by the crate their path starts with:
# cargo bloat's --crates, without installing cargo-bloat).
#
# The host build uses the release profile (OpenWrt's flags: opt-level z, fat
# LTO, panic=unwind, overflow checks); cross builds come from
# scripts/cross-build.sh (static musl; its size gate is turned off here).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

BUDGET_default=2097152
BUDGET_nossl=1572864
BIRD=$(command -v bird || echo /usr/sbin/bird)
bird_size=$(stat -c %s "$BIRD" 2>/dev/null || echo 0)
OUT=target/size
mkdir -p "$OUT"

rows=()
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

for set in default nossl; do
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

for t in "$@"; do
	for set in default nossl; do
		args=()
		[ "$set" = nossl ] && args=(--no-default-features)
		PATHOSD_SIZE_GATE=0 bash scripts/cross-build.sh "${args[@]}" "$t" >"$OUT/cross-$t-$set.log" 2>&1 ||
			{ echo "cross build $t $set failed: $OUT/cross-$t-$set.log" >&2; exit 1; }
		row "$t" "$set" "${PATHOSD_CROSS_DIR:-target/cross}/out/$t/$set/pathosd"
	done
done

printf '%-32s %-8s %10s %9s %9s %8s %8s\n' target features stripped "xz -9" budget /budget /BIRD
printf '%s\n' "${rows[@]}"
echo "BIRD: $BIRD, $bird_size bytes (Debian, dynamically linked)"
echo
echo "largest crates, host build, default features (bytes of functions):"
# shellcheck disable=SC2154 # set through printf -v above
echo "$crates_default"
echo
echo "largest crates, host build, --no-default-features:"
# shellcheck disable=SC2154
echo "$crates_nossl"
