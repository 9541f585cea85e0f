#!/usr/bin/env bash
# CI step for the router builds (run by .ci/run after scripts/test.sh):
#
#   1. scripts/cross-build.sh for big-endian mips (default features and
#      --no-default-features, the pathosd-nossl build), armv7, aarch64 and
#      x86_64, each with its size budget (2.0 MB default, 1.5 MB without
#      default features) and ceiling;
#   2. tests/packaging/qemu_bgp_smoke.sh on each binary under qemu-user:
#      --version, validate on every example, and a real BGP session to BIRD
#      with a VIP announced and withdrawn;
#   3. scripts/build-packages.sh makes the .ipk (OpenWrt 24.10, opkg) and
#      .apk (OpenWrt 25.12, apk-tools v3) packages from each binary;
#      tests/packaging/ipk_test.sh unpacks and installs the .ipk in a fake
#      root, tests/packaging/apk_test.sh reads the .apk with the project's
#      own reader, compares it with the golden layout and installs it in a
#      fake root.
#
#   scripts/test-cross.sh [TARGET...]   # default: mips-unknown-linux-musl
#                                       # armv7-unknown-linux-musleabihf
#                                       # aarch64-unknown-linux-musl
#                                       # x86_64-unknown-linux-musl
#
# PATHOSD_SIZE_GATE (default "ceiling" here, while the size budgets do
# not hold): a binary over its ceiling (scripts/cross-build.sh: the
# measured size plus 1 %) fails the run, one over its budget is reported;
# 1 fails on either; 0 reports both and goes on. Every other failure fails
# the run.
#
# Cache: the toolchain venv, CARGO_HOME and the cross target dir go to
# PATHOSD_CROSS_CACHE (default /var/cache/pathosd-ci/cross) when that can be
# created, else to target/cross in the clone. A cold cache only costs time.
# Prints "ok - NAME" / "not ok - NAME" and "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
export PATHOSD_SIZE_GATE=${PATHOSD_SIZE_GATE:-ceiling}
# BIRD for the smoke test, busybox for the fake roots, python3 for the .apk
# writer and reader (scripts/cross-build.sh installs the toolchain and
# qemu-user-static itself).
# shellcheck source=scripts/apt.sh
. scripts/apt.sh
apt_ensure bird2 busybox file python3

if [ "$#" -gt 0 ]; then
	TARGETS=("$@")
else
	# aarch64: the CPU of most routers sold today (MT7981/MT7986, IPQ807x);
	# x86_64: OpenWrt on PCs and VMs (it runs here without emulation).
	TARGETS=(mips-unknown-linux-musl armv7-unknown-linux-musleabihf
		aarch64-unknown-linux-musl x86_64-unknown-linux-musl)
fi
# One timestamp for every package of the run and for the tests that check
# it (a commit made meanwhile must not move it).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

cache=${PATHOSD_CROSS_CACHE:-/var/cache/pathosd-ci/cross}
if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
	export PATHOSD_CROSS_DIR=$cache
else
	export PATHOSD_CROSS_DIR=$ROOT/target/cross
fi
echo "# cross builds in $PATHOSD_CROSS_DIR, size gate $PATHOSD_SIZE_GATE"

passed=0
failed=0
# shellcheck source=scripts/tap.sh
. scripts/tap.sh
# shellcheck source=scripts/qemu.sh
. scripts/qemu.sh
# OpenWrt's package architecture of the usual target for each triple.
owrt_arch() {
	case "$1" in
		mips-*) echo mips_24kc ;;
		mipsel-*) echo mipsel_24kc ;;
		armv7-*) echo arm_cortex-a7_neon-vfpv4 ;;
		aarch64-*) echo aarch64_generic ;;
		x86_64-*) echo x86_64 ;;
	esac
}

PKGS="$PATHOSD_CROSS_DIR/packages"
rm -rf "$PKGS"
sizes=()
for t in "${TARGETS[@]}"; do
	qemu=$(qemu_of "$t")
	arch=$(owrt_arch "$t")
	if [ -z "$qemu" ]; then
		not_ok "known target $t"
		continue
	fi
	# Both feature sets on big-endian mips (the one that proves byte order);
	# the default one elsewhere, to keep CI short.
	sets=(default)
	case "$t" in mips-*) sets=(default nossl) ;; esac
	for set in "${sets[@]}"; do
		args=()
		[ "$set" = nossl ] && args=(--no-default-features)
		start=$SECONDS
		if bash scripts/cross-build.sh "${args[@]}" "$t" >"$PATHOSD_CROSS_DIR/build-$t-$set.log" 2>&1; then
			ok "cross-build $t ($set) in $((SECONDS - start)) s: $(grep -E "^$t: " "$PATHOSD_CROSS_DIR/build-$t-$set.log" | tail -n 1)"
		else
			not_ok "cross-build $t ($set)" "$(tail -n 30 "$PATHOSD_CROSS_DIR/build-$t-$set.log")"
			continue
		fi
		bin="$PATHOSD_CROSS_DIR/out/$t/$set/pathosd"
		run_suite "qemu_bgp_smoke.sh $t $set" bash tests/packaging/qemu_bgp_smoke.sh "$bin" "$qemu"
		out="$PKGS/$t-$set"
		if b=$(bash scripts/build-packages.sh --bin "$bin" --arch "$arch" --runner "$qemu" --out "$out" 2>&1); then
			ok "build-packages.sh $t ($set)"
			printf '%s\n' "$b" | sed 's/^/# /'
		else
			not_ok "build-packages.sh $t ($set)" "$b"
			continue
		fi
		ipk=$(find "$out" -maxdepth 1 -name 'pathosd*.ipk' | head -n 1)
		luci=$(find "$out" -maxdepth 1 -name 'luci-app-pathosd_*.ipk' | head -n 1)
		run_suite "ipk_test.sh $t $set" bash tests/packaging/ipk_test.sh \
			--ipk "$ipk" --luci "$luci" --bin "$bin" --runner "$qemu"
		apk=$(find "$out/$arch" -name 'pathosd*.apk' 2>/dev/null | head -n 1)
		lapk=$(find "$out/$arch" -name 'luci-app-pathosd-*.apk' 2>/dev/null | head -n 1)
		run_suite "apk_test.sh $t $set" bash tests/packaging/apk_test.sh \
			--apk "$apk" --luci "$lapk" --bin "$bin" --arch "$arch" --runner "$qemu"
		sizes+=("$t $set: binary $(stat -c %s "$bin") bytes, $(basename "$ipk") $(stat -c %s "$ipk") bytes, installed $(tar -xzOf "$ipk" ./control.tar.gz | tar -xzO ./control | sed -n 's/^Installed-Size: //p') bytes; $(basename "$apk") $(stat -c %s "$apk") bytes, installed $(python3 tests/packaging/apk_read.py "$apk" | python3 -c 'import json, sys; print(json.load(sys.stdin)["info"]["installed-size"])') bytes")
	done
done

echo "# sizes:"
printf '#   %s\n' "${sizes[@]}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
