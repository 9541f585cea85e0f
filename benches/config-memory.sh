#!/usr/bin/env bash
# What a configuration costs the daemon's memory, UCI against JSON:
#
# * start: the daemon's RSS once started and its peak (VmHWM) with 1,000
#   and 10,000 `always` VIPs and 1,000 tcp-checked VIPs, the same
#   configuration written in UCI and in JSON;
# * validate: `pathosd validate`'s peak (the child's maxrss) and time on
#   4 MiB files (the input limit), valid or not, against its peak on a
#   two-VIP file (the baseline);
# * reload: a running two-VIP daemon sent SIGHUP with each refused 4 MiB
#   file in place: its RSS before, its peak during (VmHWM reset first
#   through /proc/PID/clear_refs), its RSS after.
#
# The 4 MiB files: the shape that took a daemon to 272 MB (vip and check
# sections past the count limits), 10,000 tcp-checked VIPs (valid, and
# refused for one duplicate prefix only after all of them are decoded),
# a VIP of unknown options, and the 10,000 VIPs in JSON. Prints the tables
# of docs/performance.md ("Configuration memory").
#
#   bash benches/config-memory.sh
#   PATHOSD=target/cross/out/x86_64-unknown-linux-musl/default/pathosd \
#     bash benches/config-memory.sh              # the static musl build
#
# PATHOSD (default target/release/pathosd) is the daemon measured. The
# targets: start from UCI within 10 % of JSON; validate and reload peaks
# at most 16 MiB above the baseline, and after a reload RSS within 1 MiB
# of where it was. A ubus `reload` runs the same code as SIGHUP.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

command -v python3 >/dev/null || { echo "config-memory: python3 not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "config-memory: GNU time (/usr/bin/time) not found" >&2; exit 1; }
PATHOSD=${PATHOSD:-target/release/pathosd}
[ -x "$PATHOSD" ] || cargo build --release --locked --quiet
build=$(file -b "$PATHOSD" | grep -q 'statically linked' && echo musl || echo glibc)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pathosd-config-memory.XXXXXX")
trap 'cleanup_pids; rm -rf "$TMP"' EXIT
# A neighbor where nothing answers, and the tcp checks' port, closed.
IP=127.0.$((RANDOM % 200 + 20)).$((RANDOM % 200 + 20))

# Writes FILE.uci and FILE.json: N VIPs of KIND (always, tcp), plus a
# variant: pad4 (comments or spaces up to 4 MiB), dup (pad4, and the last
# VIP's prefix the first's), over (UCI only: vip and check sections up to
# 4 MiB, past the count limits), unknown (UCI only: one VIP of options
# pathosd does not know, up to 4 MiB).
write_configs() { # N KIND FILE [VARIANT]
  python3 - "$1" "$2" "$3" "${4:-}" "$IP" <<'EOF'
import json, sys
n, kind, out, variant, ip = sys.argv[1:]
n = int(n)
MIB4 = 4 << 20
def prefix(i):
    return "10.%d.%d.%d/32" % (200 + i // 65536, (i // 256) % 256, i % 256)
head = ("config pathosd 'main'\n\toption asn '65001'\n\toption router_id '10.0.0.1'\n"
        "\toption listen_port '-1'\n\toption api_listen ''\n\toption log_level 'info'\n"
        "\toption log_syslog '0'\n\nconfig neighbor 'r'\n\toption address '%s'\n"
        "\toption port '9'\n\toption peer_asn '65000'\n\toption required '0'\n\n" % ip)
def uci_vip(i, p):
    if kind == "always":
        return "config vip 'v%d'\n\toption prefix '%s'\n\toption always '1'\n\n" % (i, p)
    return ("config vip 'v%d'\n\toption prefix '%s'\n\nconfig check 'c%d'\n\toption vip 'v%d'\n"
            "\toption type 'tcp'\n\toption host '%s'\n\toption port '9'\n"
            "\toption interval '30s'\n\toption timeout '1s'\n\n" % (i, p, i, i, ip))
def json_vip(i, p):
    v = {"name": "v%d" % i, "prefix": p}
    if kind == "always":
        v["always"] = True
    else:
        v["check"] = {"name": "c%d" % i, "type": "tcp", "interval": "30s", "timeout": "1s",
                      "tcp": {"host": ip, "port": 9}}
    return v
prefixes = [prefix(i) for i in range(n)]
if variant == "dup":
    prefixes[-1] = prefixes[0]
def up_to_4_mib(parts, unit):
    size = sum(map(len, parts))
    i = 0
    while True:
        s = unit(i)
        if size + len(s) > MIB4:
            return "".join(parts)
        parts.append(s)
        size += len(s)
        i += 1
if variant == "over":
    uci = up_to_4_mib([head], lambda i: uci_vip(i, prefix(i)))
elif variant == "unknown":
    uci = up_to_4_mib([head, "config vip 'web'\n\toption prefix '10.0.0.1/32'\n\toption always '1'\n"],
                      lambda i: "\toption o%d 'x'\n" % i)
else:
    uci = head + "".join(uci_vip(i, p) for i, p in enumerate(prefixes))
cfg = {"schema": "v1", "router": {"asn": 65001, "router_id": "10.0.0.1"},
       "bgp": {"listen_port": -1, "neighbors": [{"name": "r", "address": ip, "port": 9,
                                                  "peer_asn": 65000, "required": False}]},
       "api": {"listen": ""}, "logging": {"level": "info", "syslog": False},
       "vips": [json_vip(i, p) for i, p in enumerate(prefixes)]}
js = json.dumps(cfg, indent=1)
if variant in ("pad4", "dup"):
    line = "#" + "x" * 98 + "\n"
    uci += line * ((MIB4 - len(uci)) // len(line))
    js += " " * (MIB4 - len(js))
for path, text in ((out + ".uci", uci), (out + ".json", js)):
    assert len(text) <= MIB4, (path, len(text))
    with open(path, "w") as f:
        f.write(text)
EOF
}

vm() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# The RSS once it no longer moves: two equal readings 100 ms apart
# (bounded: 20 s).
steady() { # PID
  local last now i
  last=$(vm "$1" VmRSS)
  for i in $(seq 1 200); do
    sleep 0.1
    now=$(vm "$1" VmRSS)
    [ "$now" = "$last" ] && break
    last=$now
  done
  echo "$last"
}

# Lines of LOG containing TEXT.
count() { grep -c -- "$2" "$1" 2>/dev/null || true; }

# Starts the daemon on CONFIG (its log in $TMP/daemon.log) and waits for
# its start line (bounded: 60 s); sets `daemon`.
start() { # CONFIG
  : >"$TMP/daemon.log"
  "$PATHOSD" run --config "$1" >/dev/null 2>"$TMP/daemon.log" &
  daemon=$!
  pids+=("$daemon")
  local i
  for _ in $(seq 1 600); do
    grep -q ' started: ' "$TMP/daemon.log" && return 0
    alive "$daemon" || break
    sleep 0.1
  done
  echo "config-memory: pathosd did not start on $1" >&2
  tail -5 "$TMP/daemon.log" >&2
  exit 1
}

# `pathosd validate` of FILE: "maxrss_kib ms exit", the maxrss as GNU
# time reports it for its own child (a process started from a large one,
# such as Python, counts that one's pages in its maxrss: the kernel keeps
# the larger of the two across exec).
validate() { # FILE
  local t0 t1 code=0
  t0=$(now)
  /usr/bin/time -f '%M' -o "$TMP/time" "$PATHOSD" validate --config "$1" >/dev/null 2>&1 || code=$?
  t1=$(now)
  echo "$(tail -1 "$TMP/time") $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }') $code"
}

# 12345 as 12,345.
fmt() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; }

# Start: UCI against JSON.
echo "### start ($build, $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
printf '| VIPs | UCI RSS KiB | JSON RSS KiB | UCI / JSON | UCI peak KiB | JSON peak KiB | UCI / JSON |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
for spec in "1000 always" "10000 always" "1000 tcp"; do
  read -r n kind <<<"$spec"
  write_configs "$n" "$kind" "$TMP/start"
  declare -A rss=() peak=()
  for f in uci json; do
    start "$TMP/start.$f"
    rss[$f]=$(steady "$daemon")
    peak[$f]=$(vm "$daemon" VmHWM)
    stop "$daemon"
    forget "$daemon"
  done
  # shellcheck disable=SC2016 # the backquotes are Markdown's
  printf '| %s `%s` | %s | %s | %s | %s | %s | %s |\n' "$(fmt "$n")" "$kind" \
    "$(fmt "${rss[uci]}")" "$(fmt "${rss[json]}")" \
    "$(awk -v a="${rss[uci]}" -v b="${rss[json]}" 'BEGIN { printf "%.2f", a / b }')" \
    "$(fmt "${peak[uci]}")" "$(fmt "${peak[json]}")" \
    "$(awk -v a="${peak[uci]}" -v b="${peak[json]}" 'BEGIN { printf "%.2f", a / b }')"
done

# The 4 MiB files and a two-VIP baseline.
write_configs 2 always "$TMP/two"
write_configs 1 tcp "$TMP/over" over
write_configs 1 tcp "$TMP/unknown" unknown
write_configs 10000 tcp "$TMP/valid" pad4
write_configs 10000 tcp "$TMP/dup" dup
files=(
  "UCI, vip and check sections past the limits|$TMP/over.uci"
  "UCI, a VIP of unknown options|$TMP/unknown.uci"
  "UCI, 10,000 tcp-checked VIPs, valid|$TMP/valid.uci"
  "UCI, 10,000 tcp-checked VIPs, one duplicate prefix|$TMP/dup.uci"
  "JSON, 10,000 tcp-checked VIPs, valid|$TMP/valid.json"
  "JSON, 10,000 tcp-checked VIPs, one duplicate prefix|$TMP/dup.json"
)

echo
echo "### validate"
read -r base _ _ < <(validate "$TMP/two.uci")
printf '| 4 MiB file | exit | peak KiB (+ above a two-VIP file'"'"'s %s) | time ms |\n' "$(fmt "$base")"
printf '|---|---:|---:|---:|\n'
for entry in "${files[@]}"; do
  what=${entry%%|*} f=${entry#*|}
  read -r peak ms code < <(validate "$f")
  printf '| %s | %s | %s (+%s) | %s |\n' "$what" "$code" "$(fmt "$peak")" "$(fmt $((peak - base)))" "$(fmt "$ms")"
done

echo
echo "### reload (SIGHUP) of a running two-VIP daemon"
printf '| 4 MiB file | result | RSS before KiB | peak KiB (+) | RSS after KiB (+) | time ms |\n'
printf '|---|---|---:|---:|---:|---:|\n'
cp "$TMP/two.uci" "$TMP/live"
start "$TMP/live"
for entry in "${files[@]}"; do
  what=${entry%%|*} f=${entry#*|}
  case $what in *valid) continue ;; esac
  before=$(steady "$daemon")
  echo 5 >"/proc/$daemon/clear_refs"
  n=$(count "$TMP/daemon.log" 'reload: ')
  cp "$f" "$TMP/live.new"
  mv "$TMP/live.new" "$TMP/live"
  t0=$(now)
  kill -HUP "$daemon"
  for _ in $(seq 1 600); do
    [ "$(count "$TMP/daemon.log" 'reload: ')" -gt "$n" ] && break
    sleep 0.05
  done
  t1=$(now)
  line=$(grep -- 'reload: ' "$TMP/daemon.log" | sed -n "$((n + 1))p")
  case $line in
    *'reload: applied'*) result=applied ;;
    '') result='no answer' ;;
    *) result=refused ;;
  esac
  after=$(steady "$daemon")
  peak=$(vm "$daemon" VmHWM)
  printf '| %s | %s | %s | %s (+%s) | %s (+%s) | %s |\n' "$what" "$result" "$(fmt "$before")" \
    "$(fmt "$peak")" "$(fmt $((peak - before)))" "$(fmt "$after")" "$((after - before))" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
  # The file the daemon runs stays the two VIPs for the next reload.
  cp "$TMP/two.uci" "$TMP/live"
done
stop "$daemon"
forget "$daemon"
