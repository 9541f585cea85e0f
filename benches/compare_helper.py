#!/usr/bin/env python3
"""The parts of benches/compare.sh that bash does badly.

  cpu PID         CPU time in ns of PID and its descendants: each live
                  process's own clock (CLOCK_PROCESS_CPUTIME_ID through
                  clock_getcpuclockid's encoding: ns, and it includes threads
                  that already exited, which /proc/PID/task/* misses) plus the
                  children it has reaped (cutime + cstime of /proc/PID/stat,
                  in clock ticks: ExaBGP's healthcheck forks one curl per
                  probe).
  mem PID         "rss hwm anon smaps_anon pss" in KiB, summed over PID and
                  its descendants (VmRSS, VmHWM, RssAnon of /proc/PID/status;
                  Anonymous and Pss of /proc/PID/smaps_rollup).
  pcap FILE       one line "epoch_s src_ip type length" per BGP message in a
                  tcpdump capture (TCP reassembled per direction; type 2 =
                  UPDATE, and an UPDATE of length 23 is an IPv4 End-of-RIB).
  mrt N FILE      an MRT TABLE_DUMP_V2 file (RFC 6396) of N /32 routes
                  10.4.0.0 upwards, for `gobgp mrt inject global`, then
                  2,048 repeats of them (see below).
  backend IP PORT STAMPFILE
                  a listener for the checks: answers anything that looks like
                  an HTTP request with 200 "ok", closes every other connection;
                  writes the epoch time it started listening to STAMPFILE.
"""
import asyncio
import os
import struct
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def descendants(root):
    """root and every process below it (a ppid scan of /proc)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo, seen = [], [root], set()
    while todo:  # each pid once: bounded by the process count
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu(root):
    total = 0
    for pid in descendants(root):
        try:
            # clock_getcpuclockid(pid) is ((~pid) << 3) | CPUCLOCK_SCHED.
            own = time.clock_gettime_ns(((~pid) << 3) | 2)
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue  # exited between the scan and now
        fields = s[s.rindex(")") + 2:].split()
        reaped = int(fields[13]) + int(fields[14])  # cutime, cstime
        total += own + reaped * 1_000_000_000 // CLK_TCK
    print(total)


def mem(root):
    sums = {"VmRSS": 0, "VmHWM": 0, "RssAnon": 0, "Anonymous": 0, "Pss": 0}
    for pid in descendants(root):
        for name in ("status", "smaps_rollup"):
            try:
                with open(f"/proc/{pid}/{name}") as f:
                    for line in f:
                        k, _, v = line.partition(":")
                        if k in sums and v.strip().endswith("kB"):
                            sums[k] += int(v.split()[0])
            except OSError:
                pass
    print(sums["VmRSS"], sums["VmHWM"], sums["RssAnon"], sums["Anonymous"], sums["Pss"])


def pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        sys.exit(f"{path}: not a pcap file")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(end + "I", data[20:24])[0]
    l2 = {1: 14, 113: 16, 276: 20, 0: 4, 12: 0, 101: 0}.get(linktype)
    if l2 is None:
        sys.exit(f"{path}: link type {linktype} not handled")
    flows = {}  # (src, sport, dst, dport) -> {"isn": int|None, "segs": [(seq, ts, payload)]}
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        ts = sec + frac / (1e9 if nano else 1e6)
        ip = pkt[l2:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        tcp = ip[ihl:tot]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        flags = tcp[13]
        key = (".".join(map(str, ip[12:16])), sport, ".".join(map(str, ip[16:20])), dport)
        fl = flows.setdefault(key, {"isn": None, "segs": []})
        if flags & 0x02:  # SYN: a new connection restarts the stream
            if fl["segs"]:
                emit(key, fl)
            fl["isn"], fl["segs"] = seq, []
            continue
        payload = tcp[doff:]
        if payload:
            fl["segs"].append((seq, ts, payload))
    for key, fl in flows.items():
        emit(key, fl)


def emit(key, fl):
    segs = fl["segs"]
    if not segs:
        return
    base = (fl["isn"] + 1) if fl["isn"] is not None else min(s for s, _, _ in segs)
    segs = sorted((((s - base) % (1 << 32)), ts, p) for s, ts, p in segs)
    buf = bytearray()
    marks = []  # (offset in buf, timestamp of the segment that brought it)
    for rel, ts, p in segs:
        if rel + len(p) <= len(buf):
            continue  # a retransmission
        if rel > len(buf):
            break  # a hole (capture drop): stop rather than misparse
        p = p[len(buf) - rel:]
        marks.append((len(buf), ts))
        buf += p
    pos, m = 0, 0
    while pos + 19 <= len(buf):
        length = struct.unpack("!H", buf[pos + 16:pos + 18])[0]
        if length < 19:
            break
        while m + 1 < len(marks) and marks[m + 1][0] <= pos:
            m += 1
        print(f"{marks[m][1]:.6f} {key[0]} {buf[pos + 18]} {length}")
        pos += length
    fl["segs"] = []


def mrt(n, path):
    now = int(time.time())
    out = bytearray()

    def record(subtype, body):
        out.extend(struct.pack("!IHHI", now, 13, subtype, len(body)) + body)

    # PEER_INDEX_TABLE: collector id, empty view name, one IPv4 peer, AS4.
    peer = struct.pack("!B4s4sI", 0x02, bytes([127, 150, 0, 4]), bytes([127, 150, 0, 4]), 65004)
    record(1, struct.pack("!4sHH", bytes([127, 150, 0, 4]), 0, 1) + peer)
    # ORIGIN IGP, empty AS_PATH, NEXT_HOP 127.150.0.4.
    attrs = bytes([0x40, 1, 1, 0, 0x40, 2, 0, 0x40, 3, 4, 127, 150, 0, 4])
    # `gobgp mrt inject` (3.10) drops the last few hundred entries of a file
    # (its last batch, it seems): 2,048 repeats of the first routes follow,
    # each the same path again, so only repeats get lost.
    for j in range(n + 2048):
        i = j % n
        prefix = bytes([10, 4 + i // 65536, (i // 256) % 256, i % 256])
        entry = struct.pack("!HIH", 0, now, len(attrs)) + attrs
        record(2, struct.pack("!IB", j, 32) + prefix + struct.pack("!H", 1) + entry)
    with open(path, "wb") as f:
        f.write(out)


def backend(ip, port, stamp):
    # HTTP/1.1 persistence (RFC 9112 §9.3): the connection stays open for
    # the next request unless the request says `Connection: close` (curl's
    # and pathosd's default check do not reuse; `keep_alive: true` does). An
    # idle connection is closed after 30 s, requests per connection are
    # bounded.
    async def serve(reader, writer):
        try:
            for _ in range(100000):
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                if head[:4] not in (b"GET ", b"HEAD"):
                    break
                close = b"\r\nconnection: close\r\n" in head.lower()
                hdr = b"Connection: close\r\n" if close else b""
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + hdr + b"\r\n" + (b"" if head[:4] == b"HEAD" else b"ok"))
                await writer.drain()
                if close:
                    break
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(serve, ip, int(port), reuse_address=True, backlog=1024)
        with open(stamp, "w") as f:
            f.write(f"{time.time():.6f}\n")
        async with server:
            await server.serve_forever()

    asyncio.run(main())


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "cpu":
        cpu(int(args[0]))
    elif cmd == "mem":
        mem(int(args[0]))
    elif cmd == "pcap":
        pcap(args[0])
    elif cmd == "mrt":
        mrt(int(args[0]), args[1])
    elif cmd == "backend":
        backend(*args)
    else:
        sys.exit(f"unknown command {cmd}")
