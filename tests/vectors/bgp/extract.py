#!/usr/bin/env python3
"""Splits the BGP messages out of a tcpdump capture (pcap, no external libs).

Usage: extract.py CAPTURE.pcap OUTDIR

Reassembles each TCP direction by sequence number, cuts the byte stream on
the 19-byte BGP header and writes one hex file per message named
`<session>-c<connection>-<a2b|b2a>-<index>-<type>.hex`. Sessions are told
apart by port (see bird-a.conf), directions by source address.
"""
import os
import struct
import sys

SESSIONS = {17977: "e4", 17978: "e2", 17979: "ib"}
HOST_A = "127.77.0.1"
TYPES = {1: "open", 2: "update", 3: "notification", 4: "keepalive", 5: "routerefresh"}


def packets(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic == 0xA1B2C3D4:
        endian = "<"
    elif magic == 0xD4C3B2A1:
        endian = ">"
    else:
        sys.exit("not a classic pcap file (use tcpdump -w, not pcapng)")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        ts_s, ts_us, incl, _orig = struct.unpack(endian + "IIII", data[off : off + 16])
        off += 16
        frame = data[off : off + incl]
        off += incl
        if linktype == 1:  # Ethernet (Linux lo)
            if struct.unpack("!H", frame[12:14])[0] != 0x0800:
                continue
            ip = frame[14:]
        elif linktype == 113:  # Linux cooked (-i any)
            ip = frame[16:]
        elif linktype in (12, 101):  # raw IP
            ip = frame
        else:
            sys.exit("unsupported link type %d" % linktype)
        if ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 0xF) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        src = ".".join(str(b) for b in ip[12:16])
        dst = ".".join(str(b) for b in ip[16:20])
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        flags = tcp[13]
        doff = (tcp[12] >> 4) * 4
        yield (ts_s + ts_us / 1e6, src, sport, dst, dport, seq, flags, tcp[doff:])


def main():
    pcap, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    flows = {}  # (src, sport, dst, dport) -> {"isn", "first", "segs"}
    for ts, src, sport, dst, dport, seq, flags, payload in packets(pcap):
        key = (src, sport, dst, dport)
        if flags & 0x02:  # SYN: a new connection on this 4-tuple
            flows[key] = {"isn": seq, "first": ts, "segs": {}}
            continue
        flow = flows.get(key)
        if flow is None or not payload:
            continue
        rel = (seq - flow["isn"] - 1) & 0xFFFFFFFF
        flow["segs"].setdefault(rel, payload)

    # A connection is one unordered pair of flows; number them by first SYN per session.
    conns = {}
    for (src, sport, dst, dport), flow in flows.items():
        port = sport if sport in SESSIONS else dport
        pair = tuple(sorted([(src, sport), (dst, dport)]))
        conns.setdefault((SESSIONS.get(port, str(port)), pair), []).append(((src, sport, dst, dport), flow))
    order = sorted(conns.items(), key=lambda kv: min(f["first"] for _, f in kv[1]))
    counter = {}
    for (session, _pair), fl in order:
        counter[session] = counter.get(session, 0) + 1
        cidx = counter[session]
        for (src, _sport, _dst, _dport), flow in fl:
            stream = bytearray()
            for rel in sorted(flow["segs"]):
                seg = flow["segs"][rel]
                if rel > len(stream):
                    sys.exit("gap in TCP stream: capture lost packets")
                stream[rel : rel + len(seg)] = seg
            direction = "a2b" if src == HOST_A else "b2a"
            i = 0
            idx = 0
            while i + 19 <= len(stream):
                length = struct.unpack("!H", stream[i + 16 : i + 18])[0]
                if stream[i : i + 16] != b"\xff" * 16 or length < 19:
                    sys.exit("stream is not BGP at offset %d" % i)
                msg = bytes(stream[i : i + length])
                i += length
                idx += 1
                kind = TYPES.get(msg[18], "type%d" % msg[18])
                name = "%s-c%d-%s-%02d-%s.hex" % (session, cidx, direction, idx, kind)
                with open(os.path.join(outdir, name), "w") as out:
                    out.write("# BIRD 2 capture: session %s, connection %d, %s, message %d (%s)\n"
                              % (session, cidx, direction, idx, kind.upper()))
                    for j in range(0, len(msg), 32):
                        out.write(msg[j : j + 32].hex() + "\n")


if __name__ == "__main__":
    main()
