#!/usr/bin/env bash
# Client traffic through the fabric of tests/e2e_fabric.rs (a client in
# its own network namespace opening a new TCP connection per request at
# 100 requests a second, an upstream BIRD with ECMP over two edge routers,
# each with its own BIRD, announcer and HTTP backend on the anycast VIP),
# run once with pathosd as the announcer on each edge and once with ExaBGP
# + its healthcheck (`python3 -m exabgp healthcheck` running curl, as
# benches/compare.sh runs it): same BIRD recipe, same check timing
# (interval 1 s, rise 2, fall 3, withdraw), same hold time (9 s).
#
# The scenarios are the test's, in a row on one fabric per announcer:
# steady, backend crash, SIGTERM + restart and a stalled announcer (SIGSTOP,
# its backend killed) for all; `pathosd-bfd` is pathosd with the recipe's
# BFD (the edge BIRD's protocol bfd, the neighbor's bfd options), `pathosd`
# and ExaBGP run without; the drains (API, ubus, drain file), the
# reload, and procd's stop and start, an opkg upgrade and an apk upgrade
# with its restart (pathosd's init script under the test's procd
# stand-in) only for pathosd, ExaBGP having no equivalent. Per
# scenario it prints the failed requests and their window (last failure −
# first failure) side by side. docs/performance.md has a measured table.
#
# The fabric itself is the test binary's ignored test `fabric_bench`
# (FABRIC_ANNOUNCER=pathosd|exabgp): namespaces, daemons and the client are
# the test's, stopped and deleted by it; this script stops the test binary
# by PID should it be interrupted. Not part of CI (the pathosd half with
# its bounds is: tests/e2e_fabric.rs). Needs root.
#
# usage: benches/fabric.sh
# env: RUNS=1 (fabrics per announcer; each figure then lists every run),
#      ANNOUNCERS="pathosd-bfd pathosd exabgp".
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh
# shellcheck source=scripts/apt.sh
. scripts/apt.sh

runs=${RUNS:-1}
read -r -a announcers <<<"${ANNOUNCERS:-pathosd-bfd pathosd exabgp}"

[ "$(id -u)" = 0 ] || { echo "benches/fabric.sh builds network namespaces: run it as root" >&2; exit 1; }
# Everything comes from Debian; a missing tool is a failure, not a skip.
apt_ensure bird2 exabgp curl iproute2 procps
for t in ip bird birdc curl sysctl /usr/sbin/exabgp; do
  command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }
done
/usr/bin/python3 -c 'import exabgp.application.healthcheck' || { echo "exabgp has no healthcheck module" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-fabric.XXXXXX")
trap 'cleanup_pids; rm -rf "$tmp"' EXIT

# The test binary (and the pathosd binary it runs), built once.
cargo test --locked --quiet --test e2e_fabric --no-run 2>"$tmp/build" || { cat "$tmp/build" >&2; exit 1; }
bin=$(cargo test --locked --test e2e_fabric --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*e2e_fabric[^"]*\)".*/\1/p' | tail -1)
[ -x "$bin" ] || { echo "no e2e_fabric test binary" >&2; exit 1; }

declare -A fails windows
scenarios=()
t0=$(now)
for a in "${announcers[@]}"; do
  for r in $(seq 1 "$runs"); do
    echo "fabric: $a, run $r" >&2
    bfd=
    [ "$a" = pathosd-bfd ] && bfd=1
    FABRIC_ANNOUNCER=${a%-bfd} FABRIC_BFD=$bfd "$bin" --exact fabric_bench --ignored --nocapture --test-threads=1 >"$tmp/out" 2>"$tmp/err" &
    pids+=("$!")
    if ! wait "$!"; then
      echo "fabric_bench failed for $a:" >&2
      tail -40 "$tmp/err" >&2
      exit 1
    fi
    forget "$!"
    grep '^FABRIC ' "$tmp/err" >&2 || true
    while IFS='|' read -r _ name _ failed window; do
      key="$a|$name"
      [ -n "${fails[$key]:-}" ] || {
        [[ " ${scenarios[*]} " == *" ${name// /_} "* ]] || scenarios+=("${name// /_}")
      }
      fails[$key]="${fails[$key]:+${fails[$key]} / }$failed"
      windows[$key]="${windows[$key]:+${windows[$key]} / }$window"
    # libtest prints `test fabric_bench ... ` ahead of the first row.
    done < <(sed -n 's/.*FABRIC-ROW /FABRIC-ROW /p' "$tmp/out")
  done
done

label() { case $1 in pathosd) echo pathosd ;; pathosd-bfd) echo "pathosd with BFD" ;; exabgp) echo "ExaBGP + healthcheck" ;; *) echo "$1" ;; esac; }
# A markdown table, as docs/performance.md carries it.
printf '\n| scenario |'
for a in "${announcers[@]}"; do printf ' %s: failed requests | window, s |' "$(label "$a")"; done
printf '\n|---|'
for _ in "${announcers[@]}"; do printf -- '---:|---:|'; done
printf '\n'
for s in "${scenarios[@]}"; do
  name=${s//_/ }
  printf '| %s |' "$name"
  for a in "${announcers[@]}"; do
    printf ' %s | %s |' "${fails[$a|$name]:-–}" "${windows[$a|$name]:-–}"
  done
  printf '\n'
done
echo "($runs run(s) per announcer, $(elapsed "$t0" "$(now)") s in all)"
