#!/usr/bin/env bash
# Convergence: seconds from the start of a sender process until a receiving
# BIRD 2 has all N /32 routes from it, for pathosd (N `always` VIPs) and, as
# the baseline measured in the same run, a second BIRD exporting a
# `protocol static` of the same N routes over the same kind of session.
# Also: when the sender goes idle after that ("settled"), its CPU time and
# its peak RSS (VmHWM), read just before stopping it. Medians of RUNS runs
# and the ratios pathosd / BIRD; docs/performance.md has a measured table.
#
# Everything runs on 127.77.0.0/24: receiver .2 (passive, waits), pathosd
# .1 and the BIRD sender .3 (both dial the receiver at once). Every wait is
# polled with a deadline; a trap kills every process this script started
# and removes its temp dir.
#
# usage: benches/convergence.sh [RUNS] [N...]     (default: 3 1000 10000)
# env: SENDERS="pathosd bird" (either alone for digging), DEADLINE=120 (s per
# run), PATHOSD_LOG=warn (pathosd's level; logs stay in the temp dir).
# Not part of CI: it takes minutes and measures a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

runs=${1:-3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000)

bird=${BIRD:-/usr/sbin/bird}
birdc=${BIRDC:-birdc}
deadline_s=${DEADLINE:-120} # per run, from sender start to all routes
poll_s=0.05

recv_ip=127.77.0.2
ours_ip=127.77.0.1
base_ip=127.77.0.3
port=1179
recv_as=65000
send_as=65001

cargo build --release --locked --quiet
pathosd=$PWD/target/release/pathosd

tmp=$(mktemp -d /tmp/pathosd-convergence.XXXXXX)

cleanup() {
  cleanup_pids
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Quirks of BIRD on lo (as in tests/support/bird.rs): `multihop` since a
# loopback peer is not directly connected, `strict bind` so the BIRDs share
# port 1179 on their own addresses, short retry timers. `connect delay time
# 0` makes the BIRD sender dial at once (default: 5 s after startup), as
# pathosd does.
session_opts() {
  cat <<EOF
  multihop;
  strict bind on;
  hold time 9;
  connect retry time 1;
  connect delay time 0;
  error wait time 1,2;
EOF
}

receiver_conf() {
  cat <<EOF
log stderr all;
router id $recv_ip;
protocol device { }
protocol bgp sender {
  local $recv_ip port $port as $recv_as;
  neighbor $1 port $port as $send_as;
$(session_opts)
  passive on;
  ipv4 { import all; export none; };
}
EOF
}

sender_bird_conf() {
  cat <<EOF
log stderr all;
router id $base_ip;
protocol device { }
protocol static static_routes {
  ipv4;
EOF
  prefixes "$1" 200 | sed 's/.*/  route & blackhole;/'
  cat <<EOF
}
protocol bgp receiver {
  local $base_ip port $port as $send_as;
  neighbor $recv_ip port $port as $recv_as;
$(session_opts)
  ipv4 { import none; export all; };
}
EOF
}

pathosd_conf() {
  cat <<EOF
{
  "schema": "v1",
  "router": { "asn": $send_as, "router_id": "$ours_ip", "local_address": "$ours_ip" },
  "bgp": {
    "listen_port": -1,
    "hold_time": "9s",
    "neighbors": [
      { "name": "receiver", "address": "$recv_ip", "port": $port, "peer_asn": $recv_as,
        "enable_multihop": true }
    ]
  },
  "api": { "listen": "" },
  "logging": { "level": "${PATHOSD_LOG:-warn}" },
  "vips": [
EOF
  prefixes "$1" 200 | awk '{ printf "%s    { \"name\": \"v%d\", \"prefix\": \"%s\", \"always\": true }", (NR > 1 ? ",\n" : ""), NR, $0 } END { print "" }'
  cat <<EOF
  ]
}
EOF
}

# Starts `bird -f` in the background; sets $bird_pid.
start_bird() {
  local dir=$1
  "$bird" -f -c "$dir/bird.conf" -s "$dir/bird.ctl" -P "$dir/bird.pid" \
    >/dev/null 2>"$dir/bird.log" &
  bird_pid=$!
  pids+=("$bird_pid")
}

# CPU time of a live process's threads, in ns (schedstat: finer than the
# 10 ms ticks of /proc/PID/stat, which round a BIRD run to 0). %.0f, not
# %d: mawk clamps %d at 2^31 (2.1 s).
cpu_ns() {
  cat "/proc/$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { if (NR == 0) exit 1; printf "%.0f\n", s }'
}

# VmHWM of a live process, in KiB.
hwm_kib() {
  awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

# Prints "established_s converged_s transfer_s settled_s cpu_s rss_kib" for
# one run of one sender, all from the sender's start; transfer_s =
# converged_s - established_s (both as first seen by a poll, so good to
# about one poll interval); cpu_s is the sender's CPU time when stopped.
run_once() {
  local kind=$1 n=$2 i=$3
  local dir=$tmp/$kind-$n-$i rdir sdir
  rdir=$dir/recv
  sdir=$dir/send
  mkdir -p "$rdir" "$sdir"
  local sender_ip=$ours_ip
  [ "$kind" = bird ] && sender_ip=$base_ip
  receiver_conf "$sender_ip" >"$rdir/bird.conf"
  start_bird "$rdir"
  local recv_pid=$bird_pid
  wait_ctl "$rdir/bird.ctl"

  if [ "$kind" = bird ]; then
    sender_bird_conf "$n" >"$sdir/bird.conf"
  else
    pathosd_conf "$n" >"$sdir/pathosd.json"
  fi

  local t0 send_pid
  t0=$(now)
  if [ "$kind" = bird ]; then
    start_bird "$sdir"
    send_pid=$bird_pid
  else
    "$pathosd" run --config "$sdir/pathosd.json" >/dev/null 2>"$sdir/pathosd.log" &
    send_pid=$!
    pids+=("$send_pid")
  fi

  local est="" done="" out imported t
  local end
  end=$(awk -v a="$t0" -v d="$deadline_s" 'BEGIN { printf "%.3f", a + d }')
  while :; do
    out=$("$birdc" -s "$rdir/bird.ctl" show protocols all sender 2>/dev/null || true)
    t=$(now)
    if [ -z "$est" ] && grep -q 'BGP state:[[:space:]]*Established' <<<"$out"; then
      est=$(elapsed "$t0" "$t")
    fi
    imported=$(awk '/Routes:/ { print $2; exit }' <<<"$out")
    if [ "${imported:-0}" -ge "$n" ]; then
      done=$(elapsed "$t0" "$t")
      break
    fi
    if awk -v t="$t" -v e="$end" 'BEGIN { exit !(t > e) }'; then
      break
    fi
    if ! alive "$send_pid"; then
      echo "$kind sender died; log:" >&2
      tail -5 "$sdir"/*.log >&2 || true
      break
    fi
    sleep "$poll_s"
  done

  # Settled: the sender used at most 20 ms of CPU in 0.5 s, so the work
  # behind the announcements is over too (a sender can hand BIRD every
  # route and stay busy). Bounded by the same deadline.
  local settled="" c1 c2
  if [ -n "$done" ]; then
    while alive "$send_pid"; do
      t=$(now)
      awk -v t="$t" -v e="$end" 'BEGIN { exit !(t > e) }' && break
      c1=$(cpu_ns "$send_pid") || break
      sleep 0.5
      c2=$(cpu_ns "$send_pid") || break
      if [ $((c2 - c1)) -le 20000000 ]; then
        settled=$(elapsed "$t0" "$t")
        break
      fi
    done
  fi

  local rss cpu
  rss=$(hwm_kib "$send_pid" 2>/dev/null || echo NA)
  cpu=$(cpu_ns "$send_pid" | awk '{ printf "%.3f", $1 / 1e9 }')
  [ -n "$cpu" ] || cpu=NA
  if [ -z "$done" ]; then
    {
      echo "$kind N=$n run $i: only ${imported:-0} of $n routes (sender died or ${deadline_s} s deadline); receiver says:"
      grep -E 'BGP state|Routes:|Last error' <<<"$out" || true
      echo "sender log (last lines):"
      tail -n 8 "$sdir"/*.log || true
    } >&2
    done=NA
  elif [ -z "$settled" ]; then
    echo "$kind N=$n run $i: sender still busy at the ${deadline_s} s deadline" >&2
  fi
  stop "$send_pid"
  forget "$send_pid"
  stop "$recv_pid"
  forget "$recv_pid"
  local xfer=NA
  if [ -n "$est" ] && [ "$done" != NA ]; then
    xfer=$(awk -v a="$est" -v b="$done" 'BEGIN { printf "%.3f", b - a }')
  fi
  echo "${est:-NA} $done $xfer ${settled:-NA} $cpu $rss"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0 || v[1] == "NA") print "NA"; else print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "NA"; else printf "%.2f", a / b }'; }

fmt='%-6s %-8s %14s %12s %11s %10s %8s %13s\n'
# shellcheck disable=SC2059 # the format is this script's own
printf "$fmt" N sender established_s converged_s transfer_s settled_s cpu_s peak_rss_kib
declare -A med
for n in "${sizes[@]}"; do
  for kind in ${SENDERS:-pathosd bird}; do
    : >"$tmp/$kind-$n.results"
    for i in $(seq 1 "$runs"); do
      # No pipe: run_once must run in this shell so the trap sees its pids.
      run_once "$kind" "$n" "$i" >>"$tmp/$kind-$n.results"
      tail -n 1 "$tmp/$kind-$n.results" |
        awk -v n="$n" -v k="$kind" -v f="$fmt" '{ printf f, n, k, $1, $2, $3, $4, $5, $6 }'
    done
    for col in 1 2 3 4 5 6; do
      med[$kind,$n,$col]=$(awk -v c="$col" '{ print $c }' "$tmp/$kind-$n.results" | median)
    done
  done
done

echo
echo "medians of $runs runs; ratio = pathosd / BIRD"
row() { printf '%-8s %-13s %-13s %-13s %-6s\n' "$@"; }
row N measure pathosd bird ratio
for n in "${sizes[@]}"; do
  # measure name, results column
  for m in converged_s:2 established_s:1 transfer_s:3 settled_s:4 cpu_s:5 peak_rss_kib:6; do
    c=${m#*:}
    row "$n" "${m%:*}" "${med[pathosd,$n,$c]:-NA}" "${med[bird,$n,$c]:-NA}" \
      "$(ratio "${med[pathosd,$n,$c]:-NA}" "${med[bird,$n,$c]:-NA}")"
  done
done
