#!/usr/bin/env python3
"""Byte classes of a stripped pathosd binary: where its bytes go.

    size_classes.py UNSTRIPPED STRIPPED

UNSTRIPPED is the same link with its symbol table (scripts/cross-build.sh
keeps it as pathosd.full, v0-mangled, so a generic instantiation names the
type it is for); STRIPPED is the binary that ships. Prints one row per class
whose bytes add up to the stripped file's size exactly:

- the functions of .text by the crate that owns them (the crate their symbol
  path starts with; a generic function of std, smol, ... instantiated for a
  pathosd type counts for pathosd: the first pathosd or pathosd_core path in
  the symbol decides between "pathosd src/" and "pathosd-core", and the
  "generics" column says how much of that is such instantiations);
- ring's C and assembly (no Rust path) with TLS; musl and libunwind (zig's)
  as "libc, libunwind";
- the unwind tables (.eh_frame, .eh_frame_hdr, .gcc_except_table, or on
  ARM .ARM.exidx and .ARM.extab: the price of panic=unwind, which OpenWrt
  forces); .rodata (strings, constant tables,
  vtables); the rest (headers, .data, .got, alignment, code no symbol
  covers).

Only llvm-nm and llvm-readelf are needed (Debian's llvm).
"""
import collections
import re
import subprocess
import sys

TLS = {"rustls", "ring", "webpki", "rustls_pki_types", "untrusted", "zeroize", "subtle"}
UREQ = {"ureq", "ureq_proto", "http", "httparse", "base64", "bytes",
        "percent_encoding", "utf8_zero", "fnv", "itoa"}
SMOL = {"smol", "async_io", "async_executor", "async_task", "async_channel",
        "async_lock", "async_net", "async_process", "async_signal", "async_fs",
        "blocking", "polling", "futures_lite", "futures_core", "futures_io",
        "event_listener", "event_listener_strategy", "concurrent_queue", "parking",
        "piper", "waker_fn", "fastrand", "atomic_waker", "signal_hook_registry",
        "slab", "rustix", "crossbeam_utils", "pin_project_lite"}
STD = {"std", "core", "alloc", "hashbrown", "compiler_builtins", "std_detect",
       "rustc_demangle", "memchr", "panic_unwind", "unwind", "__rustc", "zmij",
       "getrandom", "errno"}
OTHER = {"serde_json": "serde_json", "serde": "serde_json", "serde_core": "serde_json",
         "simple_dns": "simple-dns", "nom": "nom", "regex_lite": "regex-lite",
         "log": "log, socket2, libc (Rust)", "socket2": "log, socket2, libc (Rust)",
         "libc": "log, socket2, libc (Rust)"}
# ring's C and assembly have no Rust path; they sit together in .text.
RING_C = re.compile(r"^(__LA25Thunk_)?(ring_core|fiat_|fe_|nistz|aes_nohw|ecp_|"
                    r"limbs_|LIMBS_|gcm|GFp|x25519|p256|p384|bn_|CRYPTO|chacha|poly1305)")
ORDER = ["std", "TLS", "ureq + http", "serde_json", "smol / async-io", "simple-dns",
         "nom", "regex-lite", "log, socket2, libc (Rust)", "pathosd-core", "pathosd src/",
         "libc, libunwind", "other crates", "unwind tables", "rodata",
         "headers, data, alignment"]


def crate_of(name):
    n = re.sub(r"^(<|&|\*const |\*mut |mut |dyn |\[)+", "", name)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", n)
    if m:
        return m.group(1)
    # A primitive's impl: `<u16 as rustls::...>` is the trait's crate's,
    # `<str>::parse` is core's.
    m = re.match(r"[a-z0-9_]+ as (?:&|dyn )*([A-Za-z_][A-Za-z0-9_]*)::", n)
    if m:
        return m.group(1)
    if re.match(r"[a-z0-9_]+>::", n):
        return "core"
    if "libunwind::" in n:  # zig's libunwind is C++
        return "libunwind"
    return None


def classify(name):
    """(class, generic-for-pathosd?) of a function symbol with a Rust path."""
    c = crate_of(name)
    if c == "pathosd":
        return "pathosd src/", False
    if c == "pathosd_core":
        return "pathosd-core", False
    m = re.search(r"\bpathosd(_core)?::", name)
    if m:
        return ("pathosd-core" if m.group(1) else "pathosd src/"), True
    if c in STD or c in SMOL:
        # std's or smol's generic code instantiated for another crate's
        # type counts for that crate (Vec<rustls::...> is TLS's cost).
        for m in re.finditer(r"\b([A-Za-z_][A-Za-z0-9_]*)::", name):
            o = m.group(1)
            if o in TLS or o in UREQ or o in OTHER or (o in SMOL and c in STD):
                c = o
                break
    if c in TLS:
        return "TLS", False
    if c in UREQ:
        return "ureq + http", False
    if c in SMOL:
        return "smol / async-io", False
    if c in STD:
        return "std", False
    if c in OTHER:
        return OTHER[c], False
    if c == "libunwind":
        return "libc, libunwind", False
    return "other crates", False


def main():
    full, stripped = sys.argv[1], sys.argv[2]
    nm = subprocess.run(["llvm-nm", "-S", "-C", "--radix=d", full],
                        capture_output=True, text=True, check=True).stdout
    syms = []
    for line in nm.splitlines():
        m = re.match(r"^\s*([0-9]+) ([0-9]+) ([tTwW]) (.*)$", line)
        if m and int(m.group(2)) > 0:
            syms.append((int(m.group(1)), int(m.group(2)), m.group(4)))
    ring = [a for a, _, n in syms if RING_C.match(n)]
    ring_lo, ring_hi = (min(ring), max(ring)) if ring else (1, 0)
    sections = {}
    for line in subprocess.run(["llvm-readelf", "-S", "-W", stripped],
                               capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            sections[m.group(1)] = int(m.group(2), 16)
    # scripts/hot-text.ld puts the functions a running daemon executes in
    # .text.hot, ahead of .text: both are functions.
    text_size = sections.get(".text", 0) + sections.get(".text.hot", 0)

    bytes_ = collections.Counter()
    generic = collections.Counter()
    seen = set()
    for addr, size, name in syms:
        if addr in seen:  # aliases (musl's weak names, zig's c.* names)
            continue
        seen.add(addr)
        if "::" not in name:
            if ring_lo <= addr <= ring_hi:
                cls, gen = "TLS", False
            elif name.startswith("__rust") or name.startswith("rust_"):
                cls, gen = "std", False
            else:
                cls, gen = "libc, libunwind", False
        else:
            cls, gen = classify(name)
        bytes_[cls] += size
        if gen:
            generic[cls] += size
    functions = sum(bytes_.values())
    if functions > text_size:
        # Symbols overlap (identical code folded): scale to .text.
        for k in bytes_:
            bytes_[k] = bytes_[k] * text_size // functions
    # DWARF unwind tables (mips, x86_64, aarch64), or ARM's EHABI ones.
    unwind = sum(sections.get(s, 0) for s in (".eh_frame", ".eh_frame_hdr", ".gcc_except_table",
                                              ".ARM.exidx", ".ARM.extab"))
    bytes_["unwind tables"] = unwind
    bytes_["rodata"] = sections.get(".rodata", 0)
    with open(stripped, "rb") as f:
        total = len(f.read())
    bytes_["headers, data, alignment"] = total - sum(bytes_.values())

    print(f"{'class':<28} {'bytes':>10} {'share':>6} {'generics':>9}")
    for k in ORDER:
        if bytes_.get(k, 0) == 0 and k not in ("TLS",):
            continue
        g = f"{generic[k]:9d}" if generic.get(k) else f"{'':9}"
        print(f"{k:<28} {bytes_.get(k, 0):10d} {100 * bytes_.get(k, 0) / total:5.1f}% {g}")
    print(f"{'(file, stripped)':<28} {total:10d} 100.0%")


if __name__ == "__main__":
    main()
