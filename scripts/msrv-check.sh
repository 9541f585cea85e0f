#!/usr/bin/env bash
# Builds (cargo check, all targets) with Rust 1.85, the MSRV: OpenWrt's
# release SDKs ship old Rust. Debian bookworm's main archive has rustc-web
# 1.85; installed beside rustup's toolchain, used only through RUSTC and
# /usr/bin/cargo here, with its own target dir.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/rustc --version 2>/dev/null | grep -q '^rustc 1\.85\.'; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  ver=$(apt-cache madison rustc-web | awk '$3 ~ /^1\.85\./ { print $3; exit }')
  if [ -z "$ver" ]; then
    echo "msrv-check: no rustc-web 1.85 in the Debian archive; skipped" >&2
    exit 0
  fi
  apt-get install -y -qq --no-install-recommends --allow-downgrades \
    "rustc-web=$ver" "cargo-web=$ver" "libstd-rust-web-dev=$ver" >/dev/null
fi
/usr/bin/rustc --version
RUSTC=/usr/bin/rustc CARGO_TARGET_DIR=target/msrv /usr/bin/cargo check --locked --all-targets --quiet
echo "msrv-check: builds with $(/usr/bin/rustc --version)"
