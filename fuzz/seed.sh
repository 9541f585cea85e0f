#!/usr/bin/env bash
# Seeds fuzz/corpus/bgp_decode from the BIRD golden vectors, once per
# DecodeCtx mode byte (four-octet or not, e/iBGP), plus raw-body and
# encode_updates mode inputs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dst=$here/corpus/bgp_decode
mkdir -p "$dst"
for f in "$here"/../tests/vectors/bgp/captured/*.hex; do
  name=$(basename "$f" .hex)
  hex=$(grep -v '^#' "$f" | tr -d ' \n')
  for mode in 00 01 02 03; do
    printf '%s%s' "$mode" "$hex" | xxd -r -p >"$dst/$name-$mode"
  done
  # Raw body mode: mode 0x07, type octet, body.
  printf '07%s' "${hex:36}" | xxd -r -p >"$dst/$name-raw"
  # encode_updates mode (0x08/0x09): any bytes describe routes.
  printf '09%s' "$hex" | xxd -r -p >"$dst/$name-pack"
done
ls "$dst" | wc -l
