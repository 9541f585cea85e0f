#!/usr/bin/env python3
"""Fails when an entry of scripts/hot-text.ld names no function of the
binary it was linked into.

    scripts/hot-text-check.py FULL_BINARY [LIST]

FULL_BINARY: the unstripped link of scripts/cross-build.sh (pathosd.full,
next to each stripped binary), whose symbols are the functions' names, and
so the names of the input sections the list places (`.text.NAME`,
`.text.unlikely.NAME`: each function is a section of its own). LIST:
scripts/hot-text.ld by default.

Why: an entry that matches nothing places nothing, and nothing else says
so. A renamed function, or a compiler-made copy whose numeric suffix moved
(`.1976` became `.1977`: the list now writes such suffixes as `.*`), falls
out of `.text.hot` silently, and the start-up code it names lands in the
cold pages again: 30 such entries cost 192 KiB of RSS with one VIP before
this check existed. Regenerate the list (benches/hot-text.sh) when it fails.

Prints "hot-text: N entries, all match" or the entries that match nothing,
and exits 1 then.
"""
import bisect
import re
import subprocess
import sys


def entries(path):
    """Each `*(...)` line of the list: its line number and its patterns,
    without the `.text.` / `.text.unlikely.` of the section names."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"\s*\*\((.*)\)\s*$", line)
            if not m:
                continue
            pats = set()
            for sec in m.group(1).split():
                for prefix in (".text.unlikely.", ".text."):
                    if sec.startswith(prefix):
                        pats.add(sec[len(prefix):])
                        break
            out.append((n, sorted(pats)))
    return out


def functions(binary):
    nm = subprocess.run(["llvm-nm", "--defined-only", binary],
                        capture_output=True, text=True, check=True).stdout
    names = set()
    for line in nm.splitlines():
        f = line.split()
        if len(f) >= 2 and f[-2] in "tTwW":
            names.add(f[-1])
    return sorted(names)


def matcher(names):
    """A test of one linker glob (`*`, `?`, `[...]`) against the names: the
    literal text before its first wildcard narrows the sorted names, a
    regular expression decides."""
    exact = set(names)

    def matches(pat):
        w = re.search(r"[*?\[]", pat)
        if not w:
            return pat in exact
        lit = pat[: w.start()]
        rx = re.compile(
            "".join(
                ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pat
            )
            + r"\Z"
        )
        i = bisect.bisect_left(names, lit)
        while i < len(names) and names[i].startswith(lit):
            if rx.match(names[i]):
                return True
            i += 1
        return False

    return matches


def main():
    binary = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else "scripts/hot-text.ld"
    listed = entries(path)
    if not listed:
        print(f"hot-text: {path} has no entries", file=sys.stderr)
        return 1
    matches = matcher(functions(binary))
    missing = [(n, p) for n, p in listed if not any(matches(x) for x in p)]
    if not missing:
        print(f"hot-text: {len(listed)} entries, all match a function of {binary}")
        return 0
    print(f"hot-text: {len(missing)} of {len(listed)} entries of {path} match no "
          f"function of {binary} (regenerate the list: benches/hot-text.sh):",
          file=sys.stderr)
    for n, p in missing[:20]:
        print(f"  line {n}: {' '.join(p)}", file=sys.stderr)
    if len(missing) > 20:
        print(f"  ... and {len(missing) - 20} more", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
