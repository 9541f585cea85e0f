#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: real peers and
# servers (BIRD, FRR, gobgpd, dnsmasq, squid), capture and metrics tools, and
# the Python gRPC server used by the gRPC check tests. Idempotent.
set -euo pipefail
pkgs=(bird2 frr gobgpd dnsmasq squid iproute2 tcpdump prometheus chromium shellcheck busybox procps
  openssl python3 python3-pip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The distribution services must not hold ports or addresses the tests use.
for svc in bird frr dnsmasq squid gobgpd prometheus; do
  (systemctl stop "$svc" || service "$svc" stop) >/dev/null 2>&1 || true
done
pkill -x bird >/dev/null 2>&1 || true
pkill -x dnsmasq >/dev/null 2>&1 || true
# Debian/Ubuntu's system Python may be marked externally managed (PEP 668).
python3 -c 'import grpc, grpc_health' 2>/dev/null ||
  python3 -m pip install -q grpcio grpcio-health-checking 2>/dev/null ||
  python3 -m pip install -q --break-system-packages grpcio grpcio-health-checking
# Packaging tests (scripts/test-packaging.sh): node runs the LuCI views in
# node:vm, python3-jsmin minifies them as LuCI's build does, make reads the
# feed Makefiles, curl fetches /status in the BIRD recipe test. Debian's nodejs
# only if no node is installed already.
pkg_missing=()
command -v node >/dev/null || pkg_missing+=(nodejs)
for p in python3-jsmin make curl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || pkg_missing+=("$p")
done
if [ "${#pkg_missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${pkg_missing[@]}" >/dev/null
fi
