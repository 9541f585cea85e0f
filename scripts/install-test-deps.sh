#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: real peers and
# servers (BIRD, FRR, gobgpd, dnsmasq, squid), capture and metrics tools, and
# the Python gRPC server used by the gRPC check tests. Idempotent.
set -euo pipefail
# shellcheck source=scripts/apt.sh
. "$(dirname "$0")/apt.sh"
# Packaging tests (scripts/test-packaging.sh): node runs the LuCI views in
# node:vm, python3-jsmin minifies them as LuCI's build does, make reads the
# feed Makefiles, curl fetches /status in the BIRD recipe test.
# Debian's nodejs only if no node is installed already. nftables:
# tests/e2e_drain_flows.rs adds the `ct state` rule without which the kernel
# tracks no connection in its namespace.
node_pkg=()
command -v node >/dev/null || node_pkg=(nodejs)
apt_ensure bird2 frr gobgpd dnsmasq squid iproute2 nftables tcpdump prometheus chromium shellcheck \
  busybox procps openssl python3 python3-pip python3-jsmin make curl "${node_pkg[@]}"
# The distribution services must not hold ports or addresses the tests use:
# they are stopped through their own service manager. Nothing is killed by
# name: a bird or dnsmasq that belongs to someone else stays up, and the test
# suite stops the daemons it starts itself by PID.
for svc in bird frr dnsmasq squid gobgpd prometheus; do
  (systemctl stop "$svc" || service "$svc" stop) >/dev/null 2>&1 || true
done
# Debian/Ubuntu's system Python may be marked externally managed (PEP 668).
python3 -c 'import grpc, grpc_health' 2>/dev/null ||
  python3 -m pip install -q grpcio grpcio-health-checking 2>/dev/null ||
  python3 -m pip install -q --break-system-packages grpcio grpcio-health-checking
# The OTLP receiver of tests/otel_export.rs decodes with the official
# protobuf definitions, and serves OTLP/gRPC with their service stubs on
# grpcio (above).
python3 -c 'import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2' 2>/dev/null ||
  python3 -m pip install -q opentelemetry-proto 2>/dev/null ||
  python3 -m pip install -q --break-system-packages opentelemetry-proto
