#!/usr/bin/env bash
# shellcheck disable=SC2016 # the row titles show `code` as written
# The status of a large daemon over ubus and HTTP: reply sizes and times at
# 1,000 and 10,000 VIPs, each with one tcp check, on a REAL ubusd (OpenWrt's
# ubus, which carries at most 1 MiB a message). Measures:
#   * ubus `status` (the default page of 100, the counts alone with limit 0,
#     and every VIP by following next_offset with limit 1000);
#   * ubus `vip`, `check`, `drain` on the last VIP;
#   * HTTP /status whole, one page of 100, and a compact page.
# Prints a table for docs/performance.md ("The status at scale").
#
# No ubusd is in Debian: build OpenWrt's ubus and libubox yourself and give
# their paths (the bench fails without them; it never skips):
#   UBUSD=/path/to/ubusd UBUS=/path/to/ubus [LD_LIBRARY_PATH=…] \
#     bash benches/status-scale.sh [COUNTS…]      # default: 1000 10000
# PATHOSD (default target/release/pathosd) is the daemon measured.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

: "${UBUSD:?set UBUSD to a ubusd built from the OpenWrt ubus sources}"
: "${UBUS:?set UBUS to the ubus command line tool of the same build}"
for tool in "$UBUSD" "$UBUS" curl python3; do
  command -v "$tool" >/dev/null || { echo "status-scale: $tool not found" >&2; exit 1; }
done
PATHOSD=${PATHOSD:-target/release/pathosd}
[ -x "$PATHOSD" ] || cargo build --release --locked --quiet
COUNTS=("$@")
[ "${#COUNTS[@]}" -gt 0 ] || COUNTS=(1000 10000)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-status-scale.XXXXXX")
trap 'cleanup_pids; rm -rf "$TMP"' EXIT
IP=127.0.$((RANDOM % 200 + 20)).$((RANDOM % 200 + 20))
API_PORT=$((20000 + RANDOM % 20000))
SOCK=$TMP/ubus.sock

start_ubusd "$SOCK" status-scale || exit 1

# The checks' backend, accepting and closing.
CHECK_PORT=$((API_PORT + 1))
start_accept_close "$IP" "$CHECK_PORT"

# N VIPs, each with a tcp check every 30 s: every check passes, so the
# status holds real results.
write_config() { # N FILE
  {
    printf "config pathosd 'main'\n\toption enabled '1'\n\toption asn '65001'\n"
    printf "\toption router_id '10.0.0.1'\n\toption listen_port '-1'\n"
    printf "\toption api_listen '%s:%s'\n\toption ubus_socket '%s'\n" "$IP" "$API_PORT" "$SOCK"
    printf "\toption log_level 'warn'\n\n"
    # A neighbor nobody answers: the VIPs' state does not need a session.
    printf "config neighbor 'r'\n\toption address '%s'\n\toption port '9'\n\toption peer_asn '65000'\n\toption required '0'\n\n" "$IP"
    prefixes "$1" 200 | awk -v ip="$IP" -v port="$CHECK_PORT" '{
      printf "config vip '\''v%05d'\''\n\toption prefix '\''%s'\''\n\n", NR - 1, $1
      printf "config check '\''c%05d'\''\n\toption vip '\''v%05d'\''\n\toption type '\''tcp'\''\n", NR - 1, NR - 1
      printf "\toption host '\''%s'\''\n\toption port '\''%s'\''\n\toption interval '\''30s'\''\n\toption timeout '\''1s'\''\n\n", ip, port
    }'
  } >"$2"
}

# Wall time in ms and reply bytes of one command; fails if the command does.
timed() { # OUT_FILE CMD…
  local out=$1 t0 t1
  shift
  t0=$(now)
  "$@" >"$out"
  t1=$(now)
  printf '%s %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')" "$(wc -c <"$out")"
}

printf '| VIPs | request | reply bytes | time (ms) |\n|---:|---|---:|---:|\n'
for n in "${COUNTS[@]}"; do
  cfg=$TMP/pathosd-$n
  write_config "$n" "$cfg"
  "$PATHOSD" run --config "$cfg" >"$TMP/daemon-$n.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  # Registered on ubus and every check reported at least once (bounded: 120 s).
  ready=0
  for _ in $(seq 1 1200); do
    if "$UBUS" -s "$SOCK" call pathosd status '{"limit":0}' >"$TMP/counts" 2>/dev/null &&
      python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["vip_counts"]; sys.exit(0 if c["healthy"] == c["total"] == int(sys.argv[2]) else 1)' "$TMP/counts" "$n"; then
      ready=1
      break
    fi
    sleep 0.1
  done
  [ "$ready" = 1 ] || { echo "status-scale: $n VIPs never all healthy on ubus" >&2; tail -5 "$TMP/daemon-$n.log" >&2; exit 1; }
  last=$(printf 'v%05d' $((n - 1)))

  row() { printf '| %s | %s | %s | %s |\n' "$n" "$1" "$3" "$2"; }
  read -r ms b < <(timed "$TMP/r" "$UBUS" -s "$SOCK" call pathosd status)
  row 'ubus `status` (first page of 100)' "$ms" "$b"
  read -r ms b < <(timed "$TMP/r" "$UBUS" -s "$SOCK" call pathosd status '{"limit":0}')
  row 'ubus `status {"limit":0}` (counts)' "$ms" "$b"
  # Every VIP, page after page (bounded: n / 100 + 1 pages).
  offset=0 pages=0 total_b=0 got=0 t0=$(now)
  while [ "$pages" -le $((n / 100 + 1)) ]; do
    "$UBUS" -s "$SOCK" call pathosd status "{\"offset\":$offset,\"limit\":1000}" >"$TMP/p"
    pages=$((pages + 1))
    total_b=$((total_b + $(wc -c <"$TMP/p")))
    read -r k next < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["vips"]), d["next_offset"] if d["next_offset"] is not None else -1)' "$TMP/p")
    got=$((got + k))
    [ "$next" -ge 0 ] || break
    offset=$next
  done
  t1=$(now)
  [ "$got" = "$n" ] || { echo "status-scale: paging gave $got of $n VIPs" >&2; exit 1; }
  row "ubus \`status\` every VIP, limit 1000: $pages pages" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')" "$total_b"
  read -r ms b < <(timed "$TMP/r" "$UBUS" -s "$SOCK" call pathosd vip "{\"name\":\"$last\"}")
  row 'ubus `vip` (the last)' "$ms" "$b"
  read -r ms b < <(timed "$TMP/r" "$UBUS" -s "$SOCK" call pathosd check "{\"vip\":\"$last\"}")
  row 'ubus `check` (the last)' "$ms" "$b"
  read -r ms b < <(timed "$TMP/r" "$UBUS" -s "$SOCK" call pathosd drain "{\"vip\":\"$last\",\"enable\":true}")
  row 'ubus `drain` (the last)' "$ms" "$b"
  base="http://$IP:$API_PORT"
  read -r ms b < <(timed "$TMP/r" curl -sf --max-time 30 "$base/status")
  row 'HTTP `/status` (whole)' "$ms" "$b"
  read -r ms b < <(timed "$TMP/r" curl -sf --max-time 30 "$base/status?limit=100")
  row 'HTTP `/status?limit=100`' "$ms" "$b"
  read -r ms b < <(timed "$TMP/r" curl -sf --max-time 30 "$base/status?limit=100&compact=1")
  row 'HTTP `/status?limit=100&compact=1`' "$ms" "$b"
  stop "$daemon"
  forget "$daemon"
done
