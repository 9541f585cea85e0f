#!/usr/bin/env bash
# Builds (cargo check, all targets) with Rust 1.85, the MSRV: OpenWrt's
# release SDKs ship old Rust. The compiler is Debian bookworm's rustc-web
# 1.85, unpacked into a private folder (target/msrv-toolchain) and never
# installed: installing it system-wide replaced the rustc-web that the cross
# builds use (scripts/cross-build.sh wants the one matching rust-web-src),
# and broke a cross build running beside it. Fails if the packages cannot
# be had: an MSRV check that does not run must not pass.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TC=$ROOT/target/msrv-toolchain
RUSTC=$TC/usr/bin/rustc
CARGO=$TC/usr/bin/cargo

if ! "$RUSTC" --version 2>/dev/null | grep -q '^rustc 1\.85\.'; then
  # shellcheck source=scripts/apt.sh
  . scripts/apt.sh
  # The shared libraries of rustc (LLVM 19) and cargo (curl, ssh2,
  # http-parser) come from Debian as ordinary libraries, beside any other
  # Rust; the toolchain itself is only unpacked.
  apt_ensure libllvm19 libcurl4 libssh2-1 libhttp-parser2.9 libsqlite3-0 libpcre3 gcc libc6-dev
  ver=$(apt-cache madison rustc-web | awk '$3 ~ /^1\.85\./ { print $3; exit }')
  [ -n "$ver" ] || { echo "msrv-check: no rustc-web 1.85 in the Debian archive" >&2; exit 1; }
  dl=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-msrv.XXXXXX")
  # apt downloads as its own user (_apt), who must be able to write here.
  chmod 755 "$dl"
  trap 'rm -rf "$dl"' EXIT
  (cd "$dl" && apt-get download -qq "rustc-web=$ver" "cargo-web=$ver" \
    "libstd-rust-web-dev=$ver" "libstd-rust-web-1.85=$ver")
  rm -rf "$TC"
  mkdir -p "$TC"
  for deb in "$dl"/*.deb; do
    dpkg-deb -x "$deb" "$TC"
  done
fi

# rustc finds its std through its own path (../lib/rustlib); its driver
# library is in the multiarch folder beside it.
export LD_LIBRARY_PATH="$TC/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$RUSTC" --version
RUSTC=$RUSTC RUSTDOC=$TC/usr/bin/rustdoc CARGO_TARGET_DIR=$ROOT/target/msrv \
  "$CARGO" check --locked --all-targets --quiet
echo "msrv-check: builds with $("$RUSTC" --version)"
