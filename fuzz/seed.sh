#!/usr/bin/env bash
# Seeds fuzz/corpus/bgp_decode from the BIRD golden vectors, once per
# DecodeCtx mode byte (four-octet or not, e/iBGP), plus raw-body and
# encode_updates mode inputs; and fuzz/corpus/bfd_decode from the BFD
# golden packets.
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

# bfd_decode: the golden Control packets of tests/bfd_replay.rs as
# datagrams, and a handshake as session records (event byte 04: receive
# with TTL 255 from the peer's address; 00: timer; the next byte: ms since
# the previous record).
dst=$here/corpus/bfd_decode
mkdir -p "$dst"
i=0
pkt=
for hex in \
  20400318 0a0b0c0d 00000000 000f4240 000186a0 00000000 \
  20800318 0a0b0c0d 11223344 000f4240 000186a0 00000000 \
  20e00318 0a0b0c0d 11223344 000186a0 000186a0 00000000 \
  20d00318 0a0b0c0d 11223344 000186a0 000186a0 00000000 \
  21400318 0a0b0c0d 00000000 000f4240 000186a0 00000000 \
  27000318 0a0b0c0d 11223344 000f4240 000186a0 00000000; do
  pkt+=$hex
  if [ ${#pkt} -eq 48 ]; then
    i=$((i + 1))
    printf '%s' "$pkt" | xxd -r -p >"$dst/golden-$i"
    pkt=
  fi
done
down=204003181122334400000000000f4240000186a000000000
init=20800318112233440a0b0c0d000f4240000186a000000000
upf=20d00318112233440a0b0c0d000186a0000186a000000000
upp=20e00318112233440a0b0c0d000186a0000186a000000000
printf '0400%s0405%s000a%s040a%s040a%s00ff%s' "$down" "$init" "$down" "$upf" "$upp" "$down" |
  xxd -r -p >"$dst/handshake"
ls "$dst" | wc -l
