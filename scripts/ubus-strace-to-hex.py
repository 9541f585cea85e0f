#!/usr/bin/env python3
"""Turns an strace of one ubus client into a ubus capture file in the format
of tests/vectors/ubus/*.hex (one '---- msg' block per message, its 'raw:'
line and the bytes again as tokens).

    strace -f -tt -xx -s 65535 -e trace=read,write,recvmsg,sendmsg -o OUT.strace \\
        ubus -s SOCK subscribe service
    scripts/ubus-strace-to-hex.py OUT.strace FD NAME 'header comment' ... > FILE.hex

FD is the client's socket fd in the strace (the one HELLO is read from);
NAME names the client in the direction column ("NAME -> ubusd").
"""
import re
import sys

TYPES = ["HELLO", "STATUS", "DATA", "PING", "LOOKUP", "INVOKE", "ADD_OBJECT",
         "REMOVE_OBJECT", "SUBSCRIBE", "UNSUBSCRIBE", "NOTIFY", "MONITOR"]


def unescape(s):
    return bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", s))


def main():
    path, fd, name = sys.argv[1], sys.argv[2], sys.argv[3]
    comments = sys.argv[4:]
    streams = {"in": bytearray(), "out": bytearray()}
    msgs = []
    call = re.compile(r"^(?:\d+\s+)?(\S+) (read|recvmsg|write|sendmsg)\(" + fd + r", (.*)\) = (\d+)$")
    for line in open(path):
        m = call.match(line.strip())
        if not m:
            continue
        t, op, args, n = m.group(1), m.group(2), m.group(3), int(m.group(4))
        if n == 0:
            continue
        if op in ("read", "write"):
            data = unescape(args.split('", ')[0])
        else:
            data = b"".join(unescape(b) for b in re.findall(r'iov_base="([^"]*)"', args))
        data = data[:n]
        d = "in" if op in ("read", "recvmsg") else "out"
        buf = streams[d]
        buf += data
        while len(buf) >= 12:
            length = int.from_bytes(buf[9:12], "big") & 0xFFFFFF
            total = 8 + length
            if len(buf) < total:
                break
            msgs.append((t, d, bytes(buf[:total])))
            del buf[:total]
    print("# ubus wire capture: " + comments[0] if comments else "# ubus wire capture")
    for c in comments[1:]:
        print("# " + c)
    print("# Format: every non-comment token is a hex byte, in wire order per message;")
    print("# '#' starts a comment. Each message starts with a '---- msg' comment and a")
    print("# 'raw:' line holding the whole message as one hex string.")
    print()
    for i, (t, d, b) in enumerate(msgs, 1):
        ty = TYPES[b[1]] if b[1] < len(TYPES) else "UNKNOWN(%d)" % b[1]
        seq = int.from_bytes(b[2:4], "big")
        peer = int.from_bytes(b[4:8], "big")
        way = "ubusd -> " + name if d == "in" else name + " -> ubusd"
        print("# ---- msg %d: %s  %s  seq=%d peer=0x%08x  (%d bytes)  t=%s" % (i, way, ty, seq, peer, len(b), t))
        print("#      raw: " + b.hex())
        for k in range(0, len(b), 16):
            print(" ".join("%02x" % x for x in b[k:k + 16]))
        print()


main()
