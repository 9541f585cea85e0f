#!/usr/bin/env bash
# What the OpenTelemetry export costs in flash: the stripped static musl
# binary of scripts/cross-build.sh with the export and without it (cargo
# feature without-otel: the exporter, its spans, its log copies, its
# encoders and the `otel` block's parsing left out; validation refuses every
# endpoint), built from the same tree in the same run, for each feature set
# (default: package pathosd; nossl: pathosd-nossl). The target: at most
# 60 KB on mips nossl. Prints a table for docs/performance.md ("OTLP
# export cost").
#
# What both builds share is not counted: the gRPC probe's HTTP/2 client
# (`grpc::unary`, which the export calls for grpc://), the probes' HTTP/1.1
# client, the blocking pool, and /metrics' families.
#
# usage: benches/otel-size.sh [TARGET...]   (default: mips-unknown-linux-musl)
# env: PATHOSD_CROSS_DIR (scripts/cross-build.sh's work dir, shared with it),
#      FEATURESETS="nossl default".
# Each build after the first takes about a minute (only the two pathosd
# crates are rebuilt); a cold cross toolchain takes about 15 CPU-minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a sets <<<"${FEATURESETS:-nossl default}"
if [ "$#" -gt 0 ]; then targets=("$@"); else targets=(mips-unknown-linux-musl); fi
work="${PATHOSD_CROSS_DIR:-$PWD/target/cross}"

build() { # SET EXTRA-FEATURES TARGET
  local args=()
  [ "$1" = nossl ] && args=(--no-default-features)
  PATHOSD_CROSS_FEATURES="$2" PATHOSD_SIZE_GATE=0 bash scripts/cross-build.sh "${args[@]}" "$3" >&2
}

echo "| target | feature set | with the export | without | the export costs |"
echo "|---|---|---:|---:|---:|"
for t in "${targets[@]}"; do
  for set in "${sets[@]}"; do
    case "$set" in default | nossl) ;; *) echo "FEATURESETS: default or nossl, not $set" >&2; exit 2 ;; esac
    build "$set" "" "$t"
    build "$set" without-otel "$t"
    with=$(stat -c %s "$work/out/$t/$set/pathosd")
    without=$(stat -c %s "$work/out/$t/$set+without-otel/pathosd")
    printf '| %s | %s | %s | %s | %s |\n' "$t" "$set" "$with" "$without" "$((with - without))"
  done
done
