#!/usr/bin/env bash
# Binary size of pathosd against the BGP daemons Debian ships, as ratios
# measured in the same run. Builds the stripped release binary (opt-level z,
# LTO, panic=unwind, overflow checks: OpenWrt's flags) for the host, and
# prints the largest crates when cargo-bloat is installed.
#
# The OpenWrt budget is 1.5 MB for the static musl binary; the musl builds
# for all five targets come from scripts/cross-build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
bin=target/release/pathosd
ours=$(stat -c %s "$bin")
budget=1572864
printf '%-28s %10s %8s\n' binary bytes ratio
printf '%-28s %10d %8s\n' "pathosd (x86_64, stripped)" "$ours" 1.00
for other in /usr/bin/gobgpd /usr/sbin/bird /usr/lib/frr/bgpd; do
  [ -x "$other" ] || continue
  theirs=$(stat -c %s "$other")
  # Ratio of theirs to ours: how many pathosd binaries fit in that daemon.
  printf '%-28s %10d %8s\n' "$other" "$theirs" "$(awk -v a="$theirs" -v b="$ours" 'BEGIN { printf "%.2f", a / b }')"
done
printf '%-28s %10d %8s\n' "OpenWrt budget" "$budget" "$(awk -v a="$budget" -v b="$ours" 'BEGIN { printf "%.2f", a / b }')"
if command -v cargo-bloat >/dev/null 2>&1; then
  echo
  cargo bloat --release --crates -n 12 2>/dev/null
fi
