#!/usr/bin/env python3
"""check-layers.py: the module boundaries of src/, as docs/architecture.md states them.

Reads the table of "## Modules and layers" in docs/architecture.md (a row per module: layer, directory,
public and internal headers) and its "Known crossings", then every #include in src/, and fails, naming
file and line, when
  - a module includes a header of a module of the same or a higher layer (a module builds on lower
    layers only, so the libraries link in layer order);
  - a module includes another module's internal header;
  - src/init/ (corral-init: static and libc-free) includes anything but its own headers,
    src/lib/protocol.h, src/lib/init-orders.h and freestanding headers (<linux/...>, <asm/...>,
    <stdint.h> ...), directly or
    through those headers;
  - an include names no file, or a directory of src/ has no row;
  - the table and the headers disagree: each header is in one column of its module's row, and it is
    internal exactly when its name ends in -internal.h or its first comment says "Internal to src/X/";
  - a known crossing no longer happens (the list only shrinks).
Prints TAP, a test point per rule.

Usage: check-layers.py [SOURCE_ROOT]    check a tree (default: the one this file is in)
       check-layers.py --self-test      check synthetic trees, each with one violation, and expect
                                        each violation reported (TAP too)
"""
import os
import re
import sys
import tempfile

SECTION = '## Modules and layers'
# Vendored, generated code that is not ours (fetched by scripts/fetch-grammars.sh, not in git).
SKIP_DIRS = {'src/review/grammars'}
# What corral-init may include, besides its own headers: it is libc-free (src/init/sys.h).
INIT_MAY_QUOTE = {'src/lib/protocol.h', 'src/lib/init-orders.h'}
INIT_MAY_ANGLE = re.compile(r'^(linux|asm|asm-generic)/[\w./-]+\.h$|'
                            r'^(stddef|stdint|stdbool|stdarg|stdalign|stdnoreturn|limits|float|iso646)\.h$')
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
INTERNAL_NOTE = re.compile(r'Internal to src/(\w+)/')


class Table:
    def __init__(self):
        self.modules = {}  # directory name under src/ -> dict(layer, public, internal)
        self.crossings = {}  # (file, header), both from the source root -> row line in the doc
        self.errors = []


def cells(line):
    return [c.strip() for c in line.strip().strip('|').split('|')]


def ticked(cell):
    return re.findall(r'`([^`]+)`', cell)


def read_table(root):
    """The rows of docs/architecture.md's module table and its known crossings."""
    t = Table()
    doc = os.path.join(root, 'docs', 'architecture.md')
    try:
        lines = open(doc, encoding='utf-8').read().splitlines()
    except OSError as e:
        t.errors.append('docs/architecture.md: cannot read: %s' % e.strerror)
        return t
    try:
        start = lines.index(SECTION)
    except ValueError:
        t.errors.append('docs/architecture.md: no "%s" section' % SECTION)
        return t
    in_crossings = False
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith('## '):
            break
        if line.startswith('### '):
            in_crossings = line.startswith('### Known crossings')
            continue
        if not line.startswith('|'):
            continue
        c = cells(line)
        where = 'docs/architecture.md:%d' % n
        if in_crossings:
            names = ticked(c[0]) + ticked(c[1]) if len(c) >= 2 else []
            if len(names) == 2 and names[0].startswith('src/'):
                t.crossings[(names[0], names[1])] = where
            continue
        if not c[0].isdigit():
            continue
        if len(c) < 6:
            t.errors.append('%s: a module row has six columns' % where)
            continue
        dirs = ticked(c[2])
        if len(dirs) != 1 or not re.fullmatch(r'src/\w+/', dirs[0]):
            t.errors.append('%s: the directory column is one `src/NAME/`' % where)
            continue
        t.modules[dirs[0][4:-1]] = {
            'layer': int(c[0]),
            'public': {h for h in ticked(c[4]) if h.endswith('.h')},
            'internal': {h for h in ticked(c[5]) if h.endswith('.h')},
            'where': where,
        }
    if not t.modules:
        t.errors.append('docs/architecture.md: no module rows under "%s"' % SECTION)
    return t


def first_comment(path):
    text = open(path, encoding='utf-8', errors='replace').read()
    m = re.match(r'\s*/\*(.*?)\*/', text, re.S)
    return m.group(1) if m else ''


def sources(root):
    """Every .c and .h file under src/, as paths from the root, sorted."""
    out = []
    for d, subdirs, files in os.walk(os.path.join(root, 'src')):
        rel = os.path.relpath(d, root)
        subdirs[:] = sorted(s for s in subdirs if os.path.join(rel, s) not in SKIP_DIRS)
        out += [os.path.join(rel, f) for f in sorted(files) if f.endswith(('.c', '.h'))]
    return out


def includes(root, path):
    """(line number, '<' or '"', name) for each #include of a file."""
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def module_of(path):
    parts = path.split('/')
    return parts[1] if len(parts) > 2 and parts[0] == 'src' else None


def check(root):
    """[(test point, [failures])], each failure 'file:line: what'."""
    t = read_table(root)
    results = [('the module table in docs/architecture.md reads', t.errors)]
    if t.errors:
        return results
    files = sources(root)
    known = set(files)
    rows, bounds, init, crossed = [], [], [], set()

    # Each header in one column of its row; internal exactly when named or said so.
    for f in files:
        mod = module_of(f)
        if mod is None or mod == 'init':
            continue
        if mod not in t.modules:
            rows.append('%s: src/%s/ has no row in the table of docs/architecture.md' % (f, mod))
            continue
        if not f.endswith('.h'):
            continue
        row, name = t.modules[mod], os.path.basename(f)
        note = INTERNAL_NOTE.search(first_comment(os.path.join(root, f)))
        internal = name.endswith('-internal.h') or note is not None
        if note and note.group(1) != mod:
            rows.append('%s:1: says "Internal to src/%s/" but is in src/%s/' % (f, note.group(1), mod))
        if name in row['public'] and name in row['internal']:
            rows.append('%s: %s lists it as public and internal' % (f, row['where']))
        elif name in row['public'] and internal:
            rows.append('%s: internal (its name or first comment), listed as public in %s' % (f, row['where']))
        elif name in row['internal'] and not internal:
            rows.append('%s: listed as internal in %s; end its name in -internal.h or say '
                        '"Internal to src/%s/" in its first comment' % (f, row['where'], mod))
        elif name not in row['public'] and name not in row['internal']:
            rows.append('%s: in neither header column of src/%s/ in %s' % (f, mod, row['where']))
    for mod, row in sorted(t.modules.items()):
        for name in sorted(row['public'] | row['internal']):
            if 'src/%s/%s' % (mod, name) not in known:
                rows.append('%s: lists %s, which src/%s/ does not have' % (row['where'], name, mod))

    # Includes across modules: lower layers only, public headers only.
    for f in files:
        mod = module_of(f)
        if mod is None or mod == 'init' or mod not in t.modules:
            continue
        for n, kind, name in includes(root, f):
            if kind == '<':
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(f), name))
            where = '%s:%d' % (f, n)
            if target not in known:
                bounds.append('%s: includes "%s", which is no file of src/' % (where, name))
                continue
            other = module_of(target)
            if other == mod:
                continue
            if (f, target) in t.crossings:
                crossed.add((f, target))
                continue
            if other == 'init' or other not in t.modules:
                bounds.append('%s: includes %s, outside every module' % (where, target))
                continue
            orow, row = t.modules[other], t.modules[mod]
            if os.path.basename(target) in orow['internal']:
                bounds.append('%s: includes %s, internal to src/%s/' % (where, target, other))
            elif orow['layer'] >= row['layer']:
                bounds.append('%s: src/%s/ (layer %d) includes %s of src/%s/ (layer %d); a module includes '
                              'from lower layers only' % (where, mod, row['layer'], target, other, orow['layer']))

    # corral-init: its own headers, protocol.h, freestanding headers, through every quoted header.
    todo = [f for f in files if module_of(f) == 'init']
    seen = set(todo)
    while todo:
        f = todo.pop(0)
        for n, kind, name in includes(root, f):
            where = '%s:%d' % (f, n)
            if kind == '<':
                if not INIT_MAY_ANGLE.match(name):
                    init.append('%s: corral-init is libc-free; <%s> is not a freestanding header' % (where, name))
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(f), name))
            if module_of(target) != 'init' and target not in INIT_MAY_QUOTE:
                init.append('%s: corral-init includes its own headers and %s only, not %s' %
                            (where, ', '.join(sorted(INIT_MAY_QUOTE)), target))
            elif target not in known:
                init.append('%s: includes "%s", which is no file of src/' % (where, name))
            elif target not in seen:
                seen.add(target)
                todo.append(target)

    stale = ['%s: %s no longer includes %s: remove the row' % (where, f, h)
             for (f, h), where in sorted(t.crossings.items()) if (f, h) not in crossed]
    results += [('every directory and header of src/ has its place in the table', rows),
                ('modules include public headers of lower layers only', bounds),
                ('corral-init includes only what a libc-free program may', init),
                ('every known crossing still happens', stale)]
    return results


def tap(results):
    print('1..%d' % len(results))
    bad = 0
    for i, (name, failures) in enumerate(results, 1):
        print('%s %d - %s' % ('not ok' if failures else 'ok', i, name))
        for e in failures:
            print('# ' + e)
        bad += bool(failures)
    return 1 if bad else 0


# ---- self-test: synthetic trees, one violation each ----

DOC = """# Architecture

## Modules and layers

| layer | module | directory | library | public headers | internal headers |
|---|---|---|---|---|---|
| 0 | base | `src/lib/` | `libx-lib` | `util.h` `protocol.h` | `lib-internal.h` |
| 1 | left | `src/left/` | `libx-left` | `left.h` | `left-internal.h` `helper.h` |
| 1 | right | `src/right/` | `libx-right` | `right.h` | |
| 2 | top | `src/top/` | `libx-top` | `top.h` | |

### Known crossings

| file | includes | why |
|---|---|---|
| `src/top/top.c` | `src/lib/lib-internal.h` | a reason |
"""

TREE = {
    'docs/architecture.md': DOC,
    'src/lib/util.h': '/* util.h */\n#include <stdio.h>\n',
    'src/lib/protocol.h': '/* protocol.h */\n#include <stdint.h>\n',
    'src/lib/lib-internal.h': '/* lib-internal.h */\n#include "util.h"\n',
    'src/lib/util.c': '#include "lib-internal.h"\n',
    'src/left/left.h': '/* left.h */\n#include "../lib/util.h"\n',
    'src/left/helper.h': '/* helper.h: a helper.\n * Internal to src/left/. */\n',
    'src/left/left-internal.h': '/* left-internal.h */\n#include "left.h"\n#include "helper.h"\n',
    'src/left/left.c': '#include <stdlib.h>\n#include "left-internal.h"\n',
    'src/right/right.h': '/* right.h */\n',
    'src/right/right.c': '#include "right.h"\n#include "../lib/util.h"\n',
    'src/top/top.h': '/* top.h */\n#include "../left/left.h"\n',
    'src/top/top.c': '#include "top.h"\n#include "../right/right.h"\n#include "../lib/lib-internal.h"\n',
    'src/init/sys.h': '/* sys.h */\n#include <linux/types.h>\n#include <stddef.h>\n',
    'src/init/init.c': '#include <stdbool.h>\n#include "../lib/protocol.h"\n#include "sys.h"\n',
}

# (what, {file: new content or None to delete}, the failure expected, as a substring)
CASES = [
    ('a lower layer includes a higher one', {'src/left/left.c': '#include "left.h"\n\n#include "../top/top.h"\n'},
     'src/left/left.c:3: src/left/ (layer 1) includes src/top/top.h of src/top/ (layer 2)'),
    ('a module includes one of its own layer', {'src/right/right.c': '#include "../left/left.h"\n'},
     'src/right/right.c:1: src/right/ (layer 1) includes src/left/left.h of src/left/ (layer 1)'),
    ('a header includes a higher layer', {'src/lib/util.h': '/* util.h */\n#include "../right/right.h"\n'},
     'src/lib/util.h:2: src/lib/ (layer 0) includes src/right/right.h'),
    ('an -internal.h of another module', {'src/top/top.c': '#include "../left/left-internal.h"\n'
                                                           '#include "../lib/lib-internal.h"\n'},
     'src/top/top.c:1: includes src/left/left-internal.h, internal to src/left/'),
    ('a header its first comment says internal', {'src/top/top.c': '#include "../left/helper.h"\n'
                                                                   '#include "../lib/lib-internal.h"\n'},
     'src/top/top.c:1: includes src/left/helper.h, internal to src/left/'),
    ('corral-init includes libc', {'src/init/init.c': '#include "sys.h"\n#include <stdio.h>\n'},
     'src/init/init.c:2: corral-init is libc-free; <stdio.h>'),
    ('corral-init includes a module header', {'src/init/init.c': '#include "../lib/util.h"\n'},
     'src/init/init.c:1: corral-init includes its own headers and src/lib/init-orders.h, src/lib/protocol.h only, '
     'not src/lib/util.h'),
    ('corral-init reaches libc through protocol.h', {'src/lib/protocol.h': '/* protocol.h */\n#include <string.h>\n'},
     'src/lib/protocol.h:2: corral-init is libc-free; <string.h>'),
    ('a header in no column', {'src/right/extra.h': '/* extra.h */\n'},
     'src/right/extra.h: in neither header column of src/right/'),
    ('an -internal.h listed as public', {'src/right/right-internal.h': '/* right-internal.h */\n',
                                         'docs/architecture.md': DOC.replace('`right.h` |', '`right.h` `right-internal.h` |')},
     'src/right/right-internal.h: internal (its name or first comment), listed as public'),
    ('an internal header that does not say so', {'src/left/helper.h': '/* helper.h: a helper. */\n'},
     'src/left/helper.h: listed as internal in docs/architecture.md:8'),
    ('a directory without a row', {'src/extra/extra.c': '#include "../lib/util.h"\n'},
     'src/extra/extra.c: src/extra/ has no row'),
    ('an include of no file', {'src/top/top.h': '/* top.h */\n#include "../left/gone.h"\n'},
     'src/top/top.h:2: includes "../left/gone.h", which is no file of src/'),
    ('a known crossing gone', {'src/top/top.c': '#include "top.h"\n'},
     'docs/architecture.md:16: src/top/top.c no longer includes src/lib/lib-internal.h'),
]


def make_tree(base, changes):
    tree = dict(TREE)
    tree.update(changes)
    for path, text in tree.items():
        if text is None:
            continue
        full = os.path.join(base, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w', encoding='utf-8') as f:
            f.write(text)


def self_test():
    print('1..%d' % (len(CASES) + 1))
    bad = 0
    with tempfile.TemporaryDirectory(prefix='check-layers.') as tmp:
        for i, (what, changes, expected) in enumerate([('a clean tree passes', {}, None)] + CASES, 1):
            base = os.path.join(tmp, str(i))
            make_tree(base, changes)
            failures = [e for _, errs in check(base) for e in errs]
            if expected is None:
                good = not failures
            else:
                good = len(failures) == 1 and expected in failures[0]
            print('%s %d - %s' % ('ok' if good else 'not ok', i, what))
            if not good:
                bad += 1
                print('# expected %s' % ('no failure' if expected is None else 'exactly one failure with: ' + expected))
                for e in failures:
                    print('# got: ' + e)
    return 1 if bad else 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith('-')):
        print(__doc__.split('\n\n')[-1], file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    return tap(check(os.path.normpath(root)))


if __name__ == '__main__':
    sys.exit(main(sys.argv))
