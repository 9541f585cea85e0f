#!/usr/bin/env python3
"""Reads and checks an apk-tools v3 package (.apk, ADB format) with Python's
standard library only: the project's own reader, written apart from the
writer (scripts/apk-mkpkg.py) so that a mistake in one is not repeated in
the other.

  apk_read.py PKG.apk                  # checks it, prints it as JSON
  apk_read.py PKG.apk --extract DIR    # checks it, unpacks its files into DIR
  apk_read.py PKG.apk --golden T.json [--set NAME=VALUE...]
                                       # checks it, compares it with a template
  apk_read.py --tree DIR               # the "paths" a package of DIR must have,
                                       # owned by root, for --set PATHS=...

The JSON has the layout of `apk adbdump --format json` (apk-tools 3.0.6):
"info", "paths" (each directory, its "acl" and its "files"), "scripts";
docs/testing.md records that the two agree on the project's packages.

What "checks" means (any failure: a message naming the package, exit 1):
  * the container: "ADB." or "ADBd" (raw deflate) or "ADBc" with deflate or
    no compression; schema "pckg"; blocks in order (one ADB, then SIG,
    then DATA), each length in bounds, zero padding to 8 bytes, nothing
    after the last block;
  * the ADB block: format version 0, every value's type what the schema
    wants at that place, every offset inside the block;
  * names and versions as apk accepts them; each directory's parent
    listed before it; files and directories sorted as apk sorts them;
  * the data: one DATA block for each non-empty regular file, in package
    order, none for anything else; each block's length the file's size
    and its sha256 the file's hash; an empty file's hash that of nothing;
  * installed-size the sum of the regular files' sizes; the unique id
    ("hashes") the first 20 bytes of the sha256 of the ADB block with
    those 20 bytes zeroed.

A template (--golden) is this JSON with placeholders: "@NAME@" inside a
string is replaced by the --set value; a value that is exactly "@SIZE@",
"@SHA256@" or "@HASHES@" stands for any size or digest of that form (the
checks above already tied them to the data); "@PATHS@" is replaced by the
JSON given with --set PATHS=... .
"""

import hashlib
import json
import os
import re
import struct
import sys
import zlib

SCHEMA_PACKAGE = b"pckg"


class Bad(Exception):
    pass


# --- the container ---------------------------------------------------------

def decompress(raw):
    if len(raw) < 4 or raw[:3] != b"ADB":
        raise Bad("not an ADB file (magic %r)" % raw[:4])
    kind = raw[3:4]
    if kind == b".":
        return raw, "none"
    if kind == b"d":
        body, comp = raw[4:], "deflate"
    elif kind == b"c":
        if len(raw) < 6:
            raise Bad("truncated compression header")
        alg = raw[4]
        body = raw[6:]
        if alg == 0:
            return body, "none"
        if alg != 1:
            # zstd (2) has no reader in Python's standard library.
            raise Bad("compression algorithm %d is not supported here" % alg)
        comp = "deflate"
    else:
        raise Bad("unknown ADB compression marker %r" % kind)
    d = zlib.decompressobj(-15)
    try:
        out = d.decompress(body) + d.flush()
    except zlib.error as e:
        raise Bad("deflate stream: %s" % e)
    if not d.eof:
        raise Bad("deflate stream is truncated")
    if d.unused_data:
        raise Bad("%d bytes after the deflate stream" % len(d.unused_data))
    return out, comp


def blocks(stream):
    if len(stream) < 8 or stream[:4] != b"ADB.":
        raise Bad("the uncompressed stream does not start with ADB.")
    if stream[4:8] != SCHEMA_PACKAGE:
        raise Bad("schema %r, not a package (pckg)" % stream[4:8])
    pos, out = 8, []
    while pos < len(stream):
        if len(stream) - pos < 4:
            raise Bad("truncated block header at %d" % pos)
        (word,) = struct.unpack_from("<I", stream, pos)
        typ, raw, hdr = word >> 30, word & 0x3FFFFFFF, 4
        if typ == 3:  # extended header: type in the low bits, 64-bit size
            if len(stream) - pos < 16:
                raise Bad("truncated extended block header at %d" % pos)
            typ = word & 0x3FFFFFFF
            (raw,) = struct.unpack_from("<Q", stream, pos + 8)
            hdr = 16
        if raw < hdr:
            raise Bad("block at %d shorter than its header" % pos)
        size = raw + (-raw % 8)
        if pos + size > len(stream):
            raise Bad("block at %d runs past the end (%d > %d)" % (pos, pos + size, len(stream)))
        if any(stream[pos + raw:pos + size]):
            raise Bad("block at %d: padding is not zero" % pos)
        out.append((typ, stream[pos + hdr:pos + raw]))
        pos += size
    order = "".join({0: "A", 1: "S", 2: "D"}.get(t, "?") for t, _ in out)
    if not re.match(r"AS*D*\Z", order):
        raise Bad("block order %s: want one ADB, then SIG..., then DATA..." % order)
    return out


# --- the ADB tree ------------------------------------------------------------

T_SPECIAL, T_INT, T_INT32, T_INT64 = 0x0, 0x1, 0x2, 0x3
T_BLOB8, T_BLOB16, T_BLOB32, T_ARRAY, T_OBJECT = 0x8, 0x9, 0xA, 0xD, 0xE

# Schemas: field number -> (name, kind). Kinds: "str", "hex", "int",
# "oct", "name", "version", "deps", "strs", "ml" (a script), or a schema.
ACL = {1: ("mode", "oct"), 2: ("user", "str"), 3: ("group", "str"), 4: ("xattrs", "xattrs")}
FILE = {1: ("name", "str"), 2: ("acl", ACL), 3: ("size", "int"), 4: ("mtime", "int"),
        5: ("hash", "hex"), 6: ("target", "hex")}
DIR = {1: ("name", "str"), 2: ("acl", ACL), 3: ("files", [FILE])}
INFO = {1: ("name", "name"), 2: ("version", "version"), 3: ("hashes", "hex"),
        4: ("description", "str"), 5: ("arch", "str"), 6: ("license", "str"),
        7: ("origin", "str"), 8: ("maintainer", "str"), 9: ("url", "str"),
        10: ("repo-commit", "hex"), 11: ("build-time", "int"),
        12: ("installed-size", "int"), 13: ("file-size", "int"),
        14: ("provider-priority", "int"), 15: ("depends", "deps"),
        16: ("provides", "deps"), 17: ("replaces", "deps"), 18: ("install-if", "deps"),
        19: ("recommends", "deps"), 20: ("layer", "int"), 21: ("tags", "strs")}
SCRIPTS = {1: ("trigger", "ml"), 2: ("pre-install", "ml"), 3: ("post-install", "ml"),
           4: ("pre-deinstall", "ml"), 5: ("post-deinstall", "ml"),
           6: ("pre-upgrade", "ml"), 7: ("post-upgrade", "ml")}
PACKAGE = {1: ("info", INFO), 2: ("paths", [DIR]), 3: ("scripts", SCRIPTS),
           4: ("triggers", "strs"), 5: ("replaces-priority", "int")}

NAME_RE = re.compile(rb"[A-Za-z0-9][A-Za-z0-9+._-]*\Z")
DEP_NAME_RE = re.compile(rb"[A-Za-z0-9+._,:/\[\]-]+\Z")
VERSION_RE = re.compile(
    rb"[0-9]+(\.[0-9]+)*[a-z]?(_(alpha|beta|pre|rc|cvs|svn|git|hg|p)[0-9]*)*"
    rb"(~[0-9a-f]+)?(-r[0-9]+)?\Z")
OPS = {1: "=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "><", 8: "~", 9: "~", 11: "<~", 13: ">~"}


class Tree:
    def __init__(self, adb):
        self.adb = adb
        if len(adb) < 8:
            raise Bad("ADB block shorter than its header")
        if adb[0] != 0:
            raise Bad("ADB compat version %d, not 0" % adb[0])

    def at(self, off, n, what):
        if off + n > len(self.adb):
            raise Bad("%s at %d+%d lies outside the ADB block (%d)" % (what, off, n, len(self.adb)))
        return self.adb[off:off + n]

    def int(self, v, what):
        typ, off = v >> 28, v & 0x0FFFFFFF
        if typ == T_INT:
            return off
        if typ == T_INT32:
            return struct.unpack("<I", self.at(off, 4, what))[0]
        if typ == T_INT64:
            return struct.unpack("<Q", self.at(off, 8, what))[0]
        raise Bad("%s: type %x where an integer belongs" % (what, typ))

    def blob(self, v, what):
        typ, off = v >> 28, v & 0x0FFFFFFF
        width = {T_BLOB8: 1, T_BLOB16: 2, T_BLOB32: 4}.get(typ)
        if width is None:
            raise Bad("%s: type %x where a blob belongs" % (what, typ))
        (n,) = struct.unpack({1: "<B", 2: "<H", 4: "<I"}[width], self.at(off, width, what))
        return self.at(off + width, n, what), off + width

    def slots(self, v, what):
        typ, off = v >> 28, v & 0x0FFFFFFF
        if typ not in (T_OBJECT, T_ARRAY):
            raise Bad("%s: type %x where an object or list belongs" % (what, typ))
        (n,) = struct.unpack("<I", self.at(off, 4, what))
        if n < 1:
            raise Bad("%s: object with no slot count" % what)
        return list(struct.unpack("<%dI" % n, self.at(off, 4 * n, what)))[1:]

    def value(self, v, kind, what):
        if isinstance(kind, dict):
            return self.obj(v, kind, what)
        if isinstance(kind, list):
            return [self.value(x, kind[0], "%s[%d]" % (what, i))
                    for i, x in enumerate(self.slots(v, what), start=1) if x]
        if kind in ("int", "oct"):
            return self.int(v, what)
        if kind == "deps":
            return [self.dep(x, "%s[%d]" % (what, i))
                    for i, x in enumerate(self.slots(v, what), start=1) if x]
        if kind == "strs":
            return [self.blob(x, what)[0].decode() for x in self.slots(v, what) if x]
        if kind == "xattrs":
            return ["%s=%s" % (k.decode(), val.hex()) for k, _, val in
                    (self.blob(x, what)[0].partition(b"\0") for x in self.slots(v, what) if x)]
        b = self.blob(v, what)[0]
        if kind == "hex":
            return b.hex()
        if kind == "name" and not NAME_RE.match(b):
            raise Bad("%s: %r is not a package name" % (what, b))
        if kind == "version" and not VERSION_RE.match(b):
            raise Bad("%s: %r is not an apk version" % (what, b))
        try:
            return b.decode()
        except UnicodeDecodeError:
            raise Bad("%s: not UTF-8" % what)

    def obj(self, v, schema, what):
        out = {}
        for i, x in enumerate(self.slots(v, what), start=1):
            if not x:
                continue
            if i not in schema:
                raise Bad("%s: field %d is not in the schema" % (what, i))
            name, kind = schema[i]
            out[name] = self.value(x, kind, "%s.%s" % (what, name))
        return out

    def dep(self, v, what):
        d = self.obj(v, {1: ("name", "str"), 2: ("version", "version"), 3: ("match", "int")}, what)
        name = d.get("name", "")
        if not DEP_NAME_RE.match(name.encode()):
            raise Bad("%s: %r is not a dependency name" % (what, name))
        match = d.get("match", 1)
        bang = "!" if match & 16 else ""
        if "version" not in d:
            return bang + name
        op = OPS.get(match & ~16)
        if op is None:
            raise Bad("%s: unknown version match %d" % (what, match))
        return bang + name + op + d["version"]


# --- the package -------------------------------------------------------------

def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    stream, comp = decompress(raw)
    blks = blocks(stream)
    adb = blks[0][1]
    t = Tree(adb)
    (root,) = struct.unpack_from("<I", adb, 4)
    pkg = t.obj(root, PACKAGE, "package")
    info = pkg.get("info")
    if not info or "name" not in info or "version" not in info:
        raise Bad("package without name or version")

    # The unique id: where its bytes are, then the sha256 with them zeroed.
    hv = t.slots(t.slots(root, "package")[0], "info")
    if len(hv) < 3 or not hv[2]:
        raise Bad("info has no hashes (unique id)")
    uid, at = t.blob(hv[2], "info.hashes")
    if len(uid) != 20:
        raise Bad("unique id of %d bytes, not 20" % len(uid))
    zeroed = adb[:at] + b"\0" * 20 + adb[at + 20:]
    if hashlib.sha256(zeroed).digest()[:20] != uid:
        raise Bad("unique id is not the sha256 of the ADB block")

    # The tree: sorted, parents first, sane names.
    paths = pkg.get("paths", [])
    names = [d.get("name", "") for d in paths]
    if names != sorted(names, key=lambda n: n.encode()) or len(set(names)) != len(names):
        raise Bad("directories not sorted or listed twice: %s" % names)
    for n in names:
        if n.startswith("/") or n.endswith("/") or ".." in n.split("/") or "//" in n:
            raise Bad("bad directory name %r" % n)
        if n and n.rpartition("/")[0] not in names:
            raise Bad("directory %r listed without its parent" % n)
    want = []  # (path index, file index, size, hash) of each non-empty regular file
    installed = 0
    for di, d in enumerate(paths, start=1):
        files = d.get("files", [])
        fnames = [f.get("name", "") for f in files]
        if fnames != sorted(fnames, key=lambda n: n.encode()) or len(set(fnames)) != len(fnames):
            raise Bad("files of %r not sorted or listed twice" % d.get("name", "/"))
        for fi, f in enumerate(files, start=1):
            if not f.get("name") or "/" in f["name"] or f["name"] in (".", ".."):
                raise Bad("bad file name %r in %r" % (f.get("name"), d.get("name", "/")))
            if "target" in f:  # a link or a device: no data
                continue
            size = f.get("size", 0)
            if "hash" not in f or len(f["hash"]) != 64:
                raise Bad("%s/%s: regular file without a sha256" % (d.get("name", ""), f["name"]))
            installed += size
            if size:
                want.append((di, fi, size, f["hash"]))
            elif f["hash"] != hashlib.sha256(b"").hexdigest():
                raise Bad("%s/%s: empty, but its hash is not that of nothing" % (d.get("name", ""), f["name"]))
    if info.get("installed-size") != (installed or 1):
        raise Bad("installed-size %s, the files hold %d bytes" % (info.get("installed-size"), installed))

    data = {}
    got = [b for b in blks if b[0] == 2]
    if len(got) != len(want):
        raise Bad("%d DATA blocks for %d non-empty files" % (len(got), len(want)))
    for (_, payload), (di, fi, size, digest) in zip(got, want):
        if len(payload) < 8:
            raise Bad("DATA block without its header")
        pi, fj = struct.unpack_from("<II", payload)
        if (pi, fj) != (di, fi):
            raise Bad("DATA block for %d/%d where %d/%d comes next" % (pi, fj, di, fi))
        content = payload[8:]
        where = "%s/%s" % (paths[di - 1].get("name", ""), paths[di - 1]["files"][fi - 1]["name"])
        if len(content) != size:
            raise Bad("%s: %d bytes of data, size says %d" % (where, len(content), size))
        if hashlib.sha256(content).hexdigest() != digest:
            raise Bad("%s: data does not match its sha256" % where)
        data[(di, fi)] = content
    signed = any(b[0] == 1 for b in blks)
    return pkg, data, {"compression": comp, "signed": signed, "bytes": len(raw)}


def extract(pkg, data, dest):
    for di, d in enumerate(pkg.get("paths", []), start=1):
        ddir = os.path.join(dest, d.get("name", ""))
        os.makedirs(ddir, exist_ok=True)
        for fi, f in enumerate(d.get("files", []), start=1):
            p = os.path.join(ddir, f["name"])
            if "target" in f:
                t = bytes.fromhex(f["target"])
                if struct.unpack_from("<H", t)[0] & 0o170000 != 0o120000:
                    raise Bad("%s: device files are not extracted" % p)
                os.symlink(t[2:], p)
                continue
            with open(p, "wb") as out:
                out.write(data.get((di, fi), b""))
            os.chmod(p, f["acl"]["mode"])
        os.chmod(ddir, d["acl"]["mode"])


def fill(tmpl, env):
    if isinstance(tmpl, dict):
        return {k: fill(v, env) for k, v in tmpl.items()}
    if isinstance(tmpl, list):
        return [fill(v, env) for v in tmpl]
    if isinstance(tmpl, str):
        m = re.match(r"@([A-Z_]+)@\Z", tmpl)
        if m and m.group(1) in env and isinstance(env[m.group(1)], (int, list, dict)):
            v = env[m.group(1)]
            return v if isinstance(v, int) else fill(v, env)
        for k, v in env.items():
            if isinstance(v, str):
                tmpl = tmpl.replace("@%s@" % k, v)
    return tmpl


def compare(got, want, where, out):
    if isinstance(want, str) and want in ("@SIZE@", "@SHA256@", "@HASHES@"):
        ok = {"@SIZE@": isinstance(got, int) and got >= 0,
              "@SHA256@": isinstance(got, str) and re.match(r"[0-9a-f]{64}\Z", got),
              "@HASHES@": isinstance(got, str) and re.match(r"[0-9a-f]{40}\Z", got)}[want]
        if not ok:
            out.append("%s: got %r, want %s" % (where, got, want))
    elif isinstance(want, dict) and isinstance(got, dict):
        for k in sorted(set(want) | set(got)):
            if k not in got:
                out.append("%s.%s: missing, want %r" % (where, k, want[k]))
            elif k not in want:
                out.append("%s.%s: unexpected %r" % (where, k, got[k]))
            else:
                compare(got[k], want[k], "%s.%s" % (where, k), out)
    elif isinstance(want, list) and isinstance(got, list):
        gk = [x.get("name") if isinstance(x, dict) else None for x in got]
        wk = [x.get("name") if isinstance(x, dict) else None for x in want]
        if len(got) != len(want) and gk != wk:
            out.append("%s: %d entries %s, want %d %s" % (where, len(got), gk, len(want), wk))
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, "%s[%s]" % (where, g.get("name", i) if isinstance(g, dict) else i), out)
    elif got != want:
        out.append("%s: got %r, want %r" % (where, got, want))


def tree(root):
    """Every directory under ROOT (sorted as apk sorts them), its mode and
    its files' names and modes; sizes, digests and times as placeholders."""
    out = []
    dirs = [""]
    for base, subdirs, _ in os.walk(root):
        rel = os.path.relpath(base, root)
        dirs += [os.path.normpath(os.path.join(rel, d)) for d in subdirs]
    for d in sorted(dirs, key=lambda n: n.encode()):
        full = os.path.join(root, d)
        acl = lambda p: {"mode": os.lstat(p).st_mode & 0o7777, "user": "root", "group": "root"}
        entry = {"name": d} if d else {}
        entry["acl"] = acl(full)
        files = [{"name": n, "acl": acl(os.path.join(full, n)), "size": "@SIZE@",
                  "mtime": "@EPOCH@", "hash": "@SHA256@"}
                 for n in sorted(os.listdir(full), key=lambda n: n.encode())
                 if os.path.isfile(os.path.join(full, n))]
        if files:
            entry["files"] = files
        out.append(entry)
    return out


def main(argv):
    if len(argv) == 2 and argv[0] == "--tree":
        json.dump(tree(argv[1]), sys.stdout)
        print()
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    path, rest = argv[0], argv[1:]
    pkg, data, meta = read(path)
    if not rest:
        json.dump(pkg, sys.stdout, indent=2)
        print()
        return 0
    if rest[0] == "--meta" and len(rest) == 1:
        json.dump(meta, sys.stdout)
        print()
        return 0
    if rest[0] == "--extract" and len(rest) == 2:
        extract(pkg, data, rest[1])
        return 0
    if rest[0] == "--golden" and len(rest) >= 2:
        env = {}
        args = rest[2:]
        while args:
            if args[0] != "--set" or len(args) < 2 or "=" not in args[1]:
                raise Bad("usage: --golden TEMPLATE [--set NAME=VALUE...]")
            k, _, v = args[1].partition("=")
            env[k] = json.loads(v) if k == "PATHS" else (int(v) if v.isdigit() else v)
            args = args[2:]
        with open(rest[1]) as f:
            want = fill(json.load(f), env)
        diffs = []
        compare(pkg, want, "package", diffs)
        for d in diffs:
            print(d)
        return 1 if diffs else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (Bad, OSError, ValueError) as e:
        print("apk_read.py: %s: %s" % (sys.argv[1] if len(sys.argv) > 1 else "?", e), file=sys.stderr)
        sys.exit(1)
