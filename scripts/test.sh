#!/usr/bin/env bash
# Runs every test: unit, replay and the integration tests against real BIRD,
# FRR, gobgpd, dnsmasq, squid and grpcio servers on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
cargo test --locked --all-targets
