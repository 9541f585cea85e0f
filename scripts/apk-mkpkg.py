#!/usr/bin/env python3
"""Writes an apk-tools v3 package (.apk, the ADB format) the way
`apk mkpkg` of apk-tools 3.0.x does, with Python's standard library only.

OpenWrt 25.12 installs .apk packages with apk-tools v3, and its
include/package-pack.mk makes them with `apk mkpkg`. apk-tools is not in
Debian 12, so scripts/build-packages.sh calls this instead, with the same
options package-pack.mk passes:

  apk-mkpkg.py --info name:NAME --info version:VER [--info KEY:VALUE...]
               [--script TYPE:FILE...] --files DIR --output FILE.apk

The output is byte for byte what `apk mkpkg` 3.0.6 writes for the same
input under fakeroot (docs/testing.md records the comparison), because it
follows the same steps in the same order:

  * one ADB block: a tree of objects, arrays, blobs and integers, each
    value written once and shared (apk deduplicates identical values), the
    package's "info" (name, version, description, arch, license, origin,
    maintainer, url, provider-priority, depends, provides, installed-size
    and a unique id: the first 20 bytes of the ADB block's sha256), its
    "paths" (every directory, its files with mode, owner, size, mtime and
    sha256) and its "scripts";
  * one DATA block per non-empty regular file, in the order of "paths";
  * all of it after "ADB.pckg", deflated (raw deflate, level 9) behind the
    "ADBd" magic, as apk's default compression does.

What this writer leaves out, and refuses rather than write wrongly: hard
links, device files, extended attributes (never recorded), signatures (the
package is unsigned, as OpenWrt's per-package `apk mkpkg` call leaves it;
the SDK signs the repository index instead), versioned dependency operators
other than "=", and duplicate dependency names. Every entry is owned by
root:root, as OpenWrt packs under fakeroot.

Timestamps: SOURCE_DATE_EPOCH, when set, is every file's mtime (as apk).
"""

import argparse
import hashlib
import os
import re
import stat
import struct
import sys
import zlib

# --- the ADB format (apk-tools src/adb.h, src/apk_adb.h) ----------------------

T_SPECIAL, T_INT, T_INT32, T_INT64 = 0x0, 0x1, 0x2, 0x3
T_BLOB8, T_BLOB16, T_BLOB32, T_ARRAY, T_OBJECT = 0x8, 0x9, 0xA, 0xD, 0xE
NULL = 0
SCHEMA_PACKAGE = 0x676B6370  # "pckg"
BLOCK_ADB, BLOCK_DATA = 0, 2

# Field numbers of the objects a package holds.
PI = {  # package info
    "name": 1, "version": 2, "hashes": 3, "description": 4, "arch": 5,
    "license": 6, "origin": 7, "maintainer": 8, "url": 9,
    "repo-commit": 10, "build-time": 11, "installed-size": 12,
    "file-size": 13, "provider-priority": 14, "depends": 15,
    "provides": 16, "replaces": 17, "install-if": 18, "recommends": 19,
    "layer": 20, "tags": 21,
}
PI_MAX = 22
SCRIPTS = {  # in field order
    "trigger": 1, "pre-install": 2, "post-install": 3, "pre-deinstall": 4,
    "post-deinstall": 5, "pre-upgrade": 6, "post-upgrade": 7,
}
# The --info keys this writer takes: strings, one integer, dependency lists.
STRING_INFO = ("description", "arch", "license", "origin", "maintainer", "url")
DEP_INFO = ("depends", "provides", "replaces", "install-if", "recommends")

# apk's character classes (src/ctype.c).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._-]*\Z")
DEP_NAME_RE = re.compile(r"[A-Za-z0-9+._,:/\[\]-]+\Z")
# digit{.digit}...{letter}{_suffix{number}}...{~hash}{-r#} (src/version.c)
VERSION_RE = re.compile(
    r"[0-9]+(\.[0-9]+)*[a-z]?(_(alpha|beta|pre|rc|cvs|svn|git|hg|p)[0-9]*)*"
    r"(~[0-9a-f]+)?(-r[0-9]+)?\Z")


class Fail(Exception):
    pass


def val(typ, v):
    return (typ << 28) | v


class Adb:
    """The ADB block being written. Mirrors adb_w_data(): a value whose
    bytes were written before (at a suitably aligned offset) is not written
    again, its first copy is referenced instead."""

    def __init__(self):
        self.buf = bytearray(8)  # struct adb_hdr; root filled in at the end
        self.seen = {}

    def raw(self, data, align):
        pad = -len(self.buf) % align
        self.buf += b"\0" * pad
        off = len(self.buf)
        self.buf += data
        if off >= 1 << 28:
            raise Fail("ADB block over 256 MiB")
        return off

    def data(self, data, align, cache=True):
        if cache:
            off = self.seen.get(data)
            if off is not None and off % align == 0:
                return off
        off = self.raw(data, align)
        if cache:
            self.seen[data] = off
        return off

    def blob(self, b, cache=True):
        if not b:
            return NULL
        n = len(b)
        if n > 0xFFFF:
            return val(T_BLOB32, self.data(struct.pack("<I", n) + b, 4, cache))
        if n > 0xFF:
            return val(T_BLOB16, self.data(struct.pack("<H", n) + b, 2, cache))
        return val(T_BLOB8, self.data(bytes([n]) + b, 1, cache))

    def int(self, n):
        if n >= 1 << 32:
            return val(T_INT64, self.data(struct.pack("<Q", n), 4))
        if n >= 1 << 28:
            return val(T_INT32, self.data(struct.pack("<I", n), 4))
        return val(T_INT, n)

    def obj(self, fields, typ=T_OBJECT):
        """fields: the values of slots 1..n (NULL where unset); trailing
        NULLs are dropped, an empty object is NULL."""
        fields = list(fields)
        while fields and fields[-1] == NULL:
            fields.pop()
        if not fields:
            return NULL
        words = [len(fields) + 1] + fields
        return val(typ, self.data(struct.pack("<%dI" % len(words), *words), 4))


def check_version(v, what):
    if not VERSION_RE.match(v):
        raise Fail("%s: '%s' is not an apk version" % (what, v))


def parse_deps(adb, key, text):
    """A dependency list as apk's dependencies_fromstring() writes it:
    each entry's name (and version) and its object, then the list, sorted
    by name. Only "name" and "name=version" are taken."""
    deps = []
    for word in text.replace("\n", " ").split(" "):
        if not word:
            continue
        m = re.match(r"([^<>=~!]+)(?:=([^<>=~]+))?\Z", word)
        if not m:
            raise Fail("%s: '%s': only NAME or NAME=VERSION is supported" % (key, word))
        name, ver = m.group(1), m.group(2)
        if not DEP_NAME_RE.match(name):
            raise Fail("%s: '%s' is not a dependency name" % (key, name))
        if ver is not None:
            check_version(ver, key)
        if name in (d[0] for d in deps):
            raise Fail("%s: '%s' given twice" % (key, name))
        fields = [adb.blob(name.encode())]
        if ver is not None:
            fields.append(adb.blob(ver.encode()))
        deps.append((name, adb.obj(fields)))
    # apk sorts the list (adb_wa_sort_unique) by name: bytewise, shorter first.
    deps.sort(key=lambda d: d[0].encode())
    # Written with the object tag, as adb_w_fromstring() does for lists.
    return adb.obj([d[1] for d in deps])


def walk(root):
    """Every directory below ROOT, sorted as apk sorts them (strcmp of the
    whole relative path), and the sorted entries of one directory."""
    dirs = []

    def scan(rel):
        for name in sorted(os.listdir(os.path.join(root, rel) if rel else root), key=os.fsencode):
            p = os.path.join(rel, name) if rel else name
            if stat.S_ISDIR(os.lstat(os.path.join(root, p)).st_mode):
                dirs.append(p)
                scan(p)

    scan("")
    dirs.sort(key=os.fsencode)
    return dirs


def build(info, scripts, files_dir, epoch):
    adb = Adb()
    pi = [NULL] * PI_MAX

    # assign_fields(): the --info values in field order.
    for key, num in sorted(PI.items(), key=lambda kv: kv[1]):
        if key not in info:
            continue
        text = info[key]
        if key == "name":
            if not NAME_RE.match(text):
                raise Fail("name: '%s' is not a package name" % text)
            pi[num] = adb.blob(text.encode())
        elif key == "version":
            check_version(text, "version")
            pi[num] = adb.blob(text.encode())
        elif key in STRING_INFO:
            pi[num] = adb.blob(text.encode())
        elif key == "provider-priority":
            if not text.isdigit():
                raise Fail("provider-priority: '%s' is not a number" % text)
            pi[num] = adb.int(int(text))
        elif key in DEP_INFO:
            pi[num] = parse_deps(adb, key, text)

    # The file tree: the root, then each directory in sorted order; within
    # one, its files (sorted), then the directory's own entry.
    paths = []
    data = []  # (path index, file index, bytes), in package order
    installed = 0
    for di, rel in enumerate([None] + walk(files_dir), start=1):
        full = os.path.join(files_dir, rel) if rel else files_dir
        st = os.lstat(full)
        files = []
        for name in sorted(os.listdir(full), key=os.fsencode):
            p = os.path.join(full, name)
            fst = os.lstat(p)
            mode = fst.st_mode
            target = None
            if stat.S_ISDIR(mode):
                continue
            if stat.S_ISREG(mode):
                if fst.st_nlink > 1:
                    raise Fail("%s: hard links are not supported" % p)
                with open(p, "rb") as f:
                    content = f.read()
                installed += len(content)
                size = len(content)
            elif stat.S_ISLNK(mode):
                link = os.fsencode(os.readlink(p))
                target = struct.pack("<H", stat.S_IFLNK) + link
                size = len(link)
                content = None
            else:
                raise Fail("%s: only files, directories and symlinks are supported" % p)
            bname = adb.blob(os.fsencode(name))
            bhash = adb.blob(hashlib.sha256(content).digest()) if content is not None else NULL
            btarget = adb.blob(target) if target is not None else NULL
            mtime = adb.int(epoch if epoch is not None else int(fst.st_mtime))
            bsize = adb.int(size)
            acl = adb.obj([adb.int(stat.S_IMODE(mode)), adb.blob(b"root"), adb.blob(b"root")])
            files.append((os.fsencode(name), adb.obj([bname, acl, bsize, mtime, bhash, btarget]),
                          content))
        # schema_file_array sorts by name; the listing already is.
        for fi, (_, _, content) in enumerate(files, start=1):
            if content:
                data.append((di, fi, content))
        dname = adb.blob(os.fsencode(rel)) if rel else NULL
        dacl = adb.obj([adb.int(stat.S_IMODE(st.st_mode)), adb.blob(b"root"), adb.blob(b"root")])
        dfiles = adb.obj([f[1] for f in files])
        paths.append(adb.obj([dname, dacl, dfiles]))

    pi[PI["installed-size"]] = adb.int(installed or 1)
    # The unique id: 20 zero bytes now, never shared with another value;
    # filled in below.
    pi[PI["hashes"]] = adb.blob(b"\0" * 20, cache=False)
    hash_at = (pi[PI["hashes"]] & 0x0FFFFFFF) + 1

    vinfo = adb.obj(pi[1:])
    vpaths = adb.obj(paths)
    vscripts = NULL
    if scripts:
        sv = [NULL] * len(SCRIPTS)
        for typ, num in SCRIPTS.items():
            if typ in scripts:
                sv[num - 1] = adb.blob(scripts[typ])
        vscripts = adb.obj(sv)
    root = adb.obj([vinfo, vpaths, vscripts])
    struct.pack_into("<I", adb.buf, 4, root)
    adb.buf[hash_at:hash_at + 20] = hashlib.sha256(adb.buf).digest()[:20]
    return bytes(adb.buf), data


def block(typ, payload):
    raw = 4 + len(payload)
    if raw > 0x3FFFFFFF:
        raise Fail("block of %d bytes: too large for this writer" % raw)
    return struct.pack("<I", (typ << 30) + raw) + payload + b"\0" * (-raw % 8)


def package(adb_bytes, data):
    out = bytearray(b"ADB." + struct.pack("<I", SCHEMA_PACKAGE))
    out += block(BLOCK_ADB, adb_bytes)
    for pi, fi, content in data:
        out += block(BLOCK_DATA, struct.pack("<II", pi, fi) + content)
    # apk's default compression: "ADBd", then raw deflate at level 9
    # (deflateInit2(level 9, windowBits -15, memLevel 8)).
    z = zlib.compressobj(9, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    return b"ADBd" + z.compress(bytes(out)) + z.flush()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--info", "-I", action="append", default=[], metavar="KEY:VALUE")
    ap.add_argument("--script", "-s", action="append", default=[], metavar="TYPE:FILE")
    ap.add_argument("--files", "-F", required=True, metavar="DIR")
    ap.add_argument("--output", "-o", required=True, metavar="FILE")
    a = ap.parse_args(argv)

    info = {}
    for item in a.info:
        key, sep, value = item.partition(":")
        if not sep:
            raise Fail("--info %s: missing key or value" % item)
        if key not in ("name", "version", "provider-priority") + STRING_INFO + DEP_INFO:
            raise Fail("--info %s is not supported by this writer" % key)
        info[key] = value
    for key in ("name", "version", "arch"):
        if key not in info:
            raise Fail("required info field '%s' not provided" % key)
    scripts = {}
    for item in a.script:
        typ, sep, path = item.partition(":")
        if not sep or typ not in SCRIPTS:
            raise Fail("--script %s: invalid script type" % item)
        with open(path, "rb") as f:
            scripts[typ] = f.read()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    epoch = int(epoch) if epoch else None

    adb_bytes, data = build(info, scripts, a.files, epoch)
    tmp = a.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(package(adb_bytes, data))
    os.chmod(tmp, 0o644)
    os.replace(tmp, a.output)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (Fail, OSError) as e:
        print("apk-mkpkg.py: %s" % e, file=sys.stderr)
        sys.exit(1)
