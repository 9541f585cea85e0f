#!/usr/bin/env python3
"""Checks that the file and module names docs mention exist.

usage: scripts/check-doc-names.py [DOC...]   (default: docs/architecture.md docs/testing.md docs/config.md docs/development.md)

Every backticked path (`src/rt.rs`, `tests/support/ubus_broker.rs`) must be a
file; every backticked Rust path (`check::probe::dns`, `bgp::driver`,
`support::on_rt`) must resolve to a module file in src/ or
crates/pathosd-core/src/ (items after the module: named in that file), or to
an item of tests/support. docs/testing.md must name every tests/*.rs (as
`tests/NAME.rs` or `--test NAME`) and nothing that is not there. Exit 1 on
any finding. Run from anywhere in the repository.
"""
import re, os, sys, glob
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
docs = sys.argv[1:] or ['docs/architecture.md', 'docs/testing.md', 'docs/config.md', 'docs/development.md']
def exists_path(p):
    return os.path.exists(p)
bad = []
for doc in docs:
    text = open(doc).read()
    # Fenced blocks would pair their ``` with the backticks of the text.
    text = re.sub(r'```.*?```', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    # backticked things
    for m in re.finditer(r'`([^`]+)`', text):
        t = m.group(1)
        line = text[:m.start()].count('\n') + 1
        # file paths
        if re.fullmatch(r'[\w./-]+\.(rs|md|sh|json|toml|py)', t) or re.fullmatch(r'(src|tests|crates|docs|benches|scripts|schema|fuzz)/[\w./-]*', t):
            cands = [t, 'docs/' + t]
            if '/' not in t:
                cands += [f for f in glob.glob('**/' + t, recursive=True) if '/target/' not in f and not f.startswith('target/')]
            if not any(os.path.exists(c) for c in cands):
                bad.append((doc, line, t, 'no such file'))
            continue
        # module paths a::b (lowercase idents only)
        mm = re.fullmatch(r'(?:crate::|pathosd::)?([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)+)', t)
        if mm:
            parts = mm.group(1).split('::')
            if parts[0] in ('pathosd', 'crate', 'pathosd_core'):
                parts = parts[1:]
            if parts[0] in ('smol', 'async_io', 'std', 'log', 'serde_json', 'nom'):
                continue
            if parts[0] == 'support':
                src = ''.join(open(f).read() for f in glob.glob('tests/support/*.rs'))
                if not all(re.search(r'\b(fn|struct|enum|mod|const)\s+' + r + r'\b', src) for r in parts[1:]):
                    bad.append((doc, line, t, 'not in tests/support'))
                continue
            # resolve progressively in src/ and crates/pathosd-core/src
            def resolves(parts):
                item = r'(\b(fn|mod|struct|enum|type|const|static|trait|macro_rules!)\s+%s\b|\buse\b[^;]*\b%s\b)'
                bases = ['src', 'crates/pathosd-core/src']
                # A path that starts below the top (`uci_map::map_untracked`):
                # the directories holding a module of that name.
                for b in list(bases):
                    for f in glob.glob(b + '/**/' + parts[0] + '.rs', recursive=True) + glob.glob(b + '/**/' + parts[0] + '/', recursive=True):
                        bases.append(os.path.dirname(f.rstrip('/')))
                # A test module (`bird_live::...`): a `mod` in tests/*.rs.
                tests_src = ''.join(open(f).read() for f in glob.glob('tests/*.rs'))
                if re.search(r'\bmod\s+%s\b' % parts[0], tests_src) and all(re.search(item % (r, r), tests_src) for r in parts[1:]):
                    return True
                for base in bases:
                    d = base
                    for i, p in enumerate(parts):
                        if os.path.isdir(os.path.join(d, p)):
                            # `rt.rs` beside `rt/` (its child modules): the
                            # rest may be items of the module file.
                            mf = os.path.join(d, p + '.rs')
                            rest = parts[i + 1:]
                            if rest and os.path.isfile(mf):
                                src = open(mf).read()
                                if all(re.search(item % (r, r), src) for r in rest):
                                    return True
                            d = os.path.join(d, p)
                            if i == len(parts) - 1:
                                return True
                            continue
                        f = os.path.join(d, p + '.rs')
                        rest = parts[i + 1:]
                        if not os.path.isfile(f):
                            # An item of the module `d` (its mod.rs / lib.rs).
                            f, rest = None, parts[i:]
                            for mf in ('mod.rs', 'lib.rs'):
                                if os.path.isfile(os.path.join(d, mf)):
                                    f = os.path.join(d, mf)
                            if f is None:
                                break
                        src = open(f).read()
                        if all(re.search(item % (r, r), src) for r in rest):
                            return True
                        break
                return False
            if not resolves(parts):
                bad.append((doc, line, t, 'module/item not found'))
for b in bad: print('%s:%d: `%s` %s' % b)
# testing.md vs tests/*.rs
text = open('docs/testing.md').read()
listed = set(re.findall(r'tests/(\w+)\.rs', text)) | set(re.findall(r'--test (\w+)', text))
actual = {os.path.basename(f)[:-3] for f in glob.glob('tests/*.rs')}
unlisted = sorted(actual - listed)
stale = sorted(n for n in listed - actual if not os.path.exists('tests/support/%s.rs' % n))
if unlisted: print('docs/testing.md: tests/*.rs not named:', unlisted)
if stale: print('docs/testing.md: names a test file that does not exist:', stale)
sys.exit(1 if bad or unlisted or stale else 0)
