#!/usr/bin/env bash
# Re-captures the BIRD golden vectors: runs two BIRD 2 instances on loopback
# (127.77.0.1 = bird-a.conf, 127.77.0.2 = bird-b.conf), records the sessions
# with tcpdump, drives withdrawals, a route refresh, an Administrative
# Shutdown and an Administrative Reset with shutdown communications, and
# splits the capture into one hex file per message under ./captured.
# Needs root (tcpdump), bird, birdc, python3. Every wait is bounded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/captured}
tmp=$(mktemp -d /tmp/pathosd-bird-capture.XXXXXX)
pids=()
cleanup() {
  for s in a b; do
    [ -S "$tmp/$s.ctl" ] && birdc -s "$tmp/$s.ctl" down >/dev/null 2>&1 || true
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_for DESCRIPTION SECONDS CMD...: polls CMD every 0.2 s until it succeeds.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "timeout waiting for $what" >&2
      exit 1
    fi
    sleep 0.2
  done
}

tcpdump -i lo -U -s 0 -w "$tmp/bgp.pcap" \
  'tcp and host 127.77.0.1 and host 127.77.0.2 and (port 17977 or port 17978 or port 17979)' \
  2>"$tmp/tcpdump.err" &
pids+=($!)
wait_for "tcpdump" 10 grep -q 'listening on' "$tmp/tcpdump.err"

bird -c "$here/bird-a.conf" -s "$tmp/a.ctl" -P "$tmp/a.pid"
bird -c "$here/bird-b.conf" -s "$tmp/b.ctl" -P "$tmp/b.pid"

established() { [ "$(birdc -s "$tmp/$1.ctl" show protocols | grep -c Established)" -eq 3 ]; }
wait_for "sessions" 60 established a
wait_for "sessions" 60 established b

has_route() { birdc -s "$tmp/b.ctl" show route protocol "$1" | grep -q "$2"; }
for s in e4 e2 ib; do
  wait_for "$s routes" 30 has_route "$s" 198.51.100.0/24
  wait_for "$s routes" 30 has_route "$s" 2001:db8:200::1/128
done

# Withdrawals: classic withdrawn routes and MP_UNREACH_NLRI.
birdc -s "$tmp/a.ctl" disable s4
birdc -s "$tmp/a.ctl" disable s6
no_routes() { ! birdc -s "$tmp/b.ctl" show route protocol e4 | grep -q '198.51.100.0/24\|2001:db8:100::/48'; }
wait_for "withdrawals" 30 no_routes

# ROUTE-REFRESH from B to A (RFC 2918; BIRD adds RFC 7313 BoRR/EoRR when both agree).
birdc -s "$tmp/b.ctl" reload in e4
sleep 1

# Cease with shutdown communications (RFC 8203/9003).
birdc -s "$tmp/a.ctl" disable e4 '"pathosd golden vector: planned maintenance"'
birdc -s "$tmp/a.ctl" restart e2 '"pathosd reset test"'
down() { birdc -s "$tmp/b.ctl" show protocols e4 | grep -q 'Received: Administrative shutdown\|Idle\|Active\|Connect'; }
wait_for "shutdown" 20 down
sleep 2

cleanup
trap - EXIT
sleep 1
rm -rf "$out"
python3 "$here/extract.py" "$tmp/bgp.pcap" "$out"
cp "$tmp/bgp.pcap" "$out/capture.pcap"
ls "$out"
