#!/usr/bin/env python3
"""Reports import circles between the files of each crate.

Reads every `.rs` file under `crates/*/src`, resolves the paths it uses that
start with `crate::`, `super::`, `self::`, a child module or a name imported
from one of those (following `pub use` re-exports to the file that defines the
item), and prints the strongly connected components of the file graph that
hold more than two files. A file that declares a module (`mod x;`) does not
import it by that declaration. Exits 1 when a crate has such a component, so
`make lint` keeps the rule: files import each other in at most pairs.

    scripts/import-cycles.py [--edges] [crate-dir ...]

`--edges` also prints the imports inside each reported component.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(src):
    """Source text without comments, string and char literals (replaced by spaces)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif src.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not re.match(r"[A-Za-z0-9_]", src[i - 1] if i else " "):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + m.end())
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == "b" and src.startswith('b"', i) and not re.match(r"[A-Za-z0-9_]", src[i - 1] if i else " "):
            i += 1
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                i += m.end()
                out.append("' '")
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def inline_modules(text):
    """(name, start, end) of each `mod name { … }` written inside a file."""
    out = []
    for m in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append((m.group(1), m.start(), i))
    return out


def use_paths(tree):
    """Expands a use tree (`a::{b, c::d as e, f::*}`) into (segments, alias)."""
    tokens = re.findall(r"::|\{|\}|,|\*|" + IDENT, tree)
    pos = 0

    def parse(prefix):
        nonlocal pos
        results = []
        path = list(prefix)
        while pos < len(tokens):
            t = tokens[pos]
            if t == "::":
                pos += 1
            elif t == "{":
                pos += 1
                while pos < len(tokens) and tokens[pos] != "}":
                    if tokens[pos] == ",":
                        pos += 1
                        continue
                    results += parse(path)
                pos += 1
                return results
            elif t in (",", "}"):
                break
            elif t == "*":
                pos += 1
                results.append((path + ["*"], None))
                return results
            elif t == "as":
                pos += 1
                alias = tokens[pos]
                pos += 1
                results.append((path, alias))
                return results
            else:
                path.append(t)
                pos += 1
        if path and path != list(prefix):
            last = path[-1]
            if last == "self":
                path = path[:-1]
                last = path[-1] if path else None
            results.append((path, last))
        return results

    return parse([])


class Crate:
    def __init__(self, src_dir):
        self.src = src_dir
        self.modules = {}  # module path tuple -> file
        self.files = {}  # file -> module path tuple
        for root in ("lib.rs", "main.rs"):
            if os.path.exists(os.path.join(src_dir, root)):
                self.load(os.path.join(src_dir, root), ())
        self.info = {f: self.scan(f) for f in self.files}

    def load(self, path, module):
        self.modules[module] = path
        self.files[path] = module
        text = strip(open(path, encoding="utf-8").read())
        here = os.path.dirname(path)
        base = os.path.basename(path)
        owns_dir = base in ("mod.rs", "lib.rs", "main.rs")
        child_dir = here if owns_dir else os.path.join(here, base[:-3])
        for m in re.finditer(r'(#\[path\s*=\s*""\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+(' + IDENT + r")\s*;", text):
            name = m.group(2)
            attr = re.search(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+' + name + r"\s*;",
                             open(path, encoding="utf-8").read())
            if attr:
                child = os.path.join(here, attr.group(1))
            else:
                child = os.path.join(child_dir, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(child_dir, name, "mod.rs")
            if os.path.exists(child):
                self.load(child, module + (name,))

    def scan(self, path):
        """A file's use trees, its aliases and the other paths in its text.

        A path inside an inline module (`mod tests { … }`) is read from
        that module, so its `super::` is the file itself."""
        text = strip(open(path, encoding="utf-8").read())
        inline = inline_modules(text)

        def within(pos):
            return tuple(name for name, start, end in inline if start <= pos < end)

        uses, reexports = [], {}
        for m in re.finditer(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
            for segs, alias in use_paths(m.group(2)):
                uses.append((self.inline_path(segs, within(m.start())), alias))
                if m.group(1) and alias and alias != "_" and not within(m.start()):
                    reexports[alias] = segs
        body = re.sub(r"\buse\s+[^;]+;", lambda m: " " * len(m.group(0)), text)
        body_paths = []
        for m in re.finditer(IDENT + r"(?:\s*::\s*" + IDENT + r")+", body):
            segs = [s.strip() for s in m.group(0).split("::")]
            body_paths.append(self.inline_path(segs, within(m.start())))
        return {"uses": uses, "reexports": reexports, "body": body_paths}

    @staticmethod
    def inline_path(segs, inline):
        """A path written inside inline modules, as if written at the file's top."""
        if not inline:
            return segs
        supers = 0
        while supers < len(segs) and segs[supers] == "super":
            supers += 1
        if supers == 0:
            if segs[0] == "self":
                return ["self"] + list(inline) + segs[1:]
            return segs  # crate::, a child module or an external crate
        if supers <= len(inline):
            rest = list(inline[:len(inline) - supers]) + segs[supers:]
            return ["self"] + rest
        return segs[len(inline):]

    def base(self, segs, module, aliases):
        """Where a path starts: a module path and the segments left, or None outside the crate."""
        head = segs[0]
        if head == "crate":
            return (), segs[1:]
        if head == "self":
            return module, segs[1:]
        if head == "super":
            m = module
            while segs and segs[0] == "super":
                m, segs = m[:-1], segs[1:]
            return m, segs
        if module + (head,) in self.modules:
            return module + (head,), segs[1:]
        if head in aliases:
            return aliases[head], segs[1:]
        return None

    def resolve(self, segs, file, aliases, depth=0):
        """The file that defines what `segs` names, seen from `file`."""
        start = self.base(segs, self.files[file], aliases)
        if start is None:
            return None
        module, rest = start
        while rest and module + (rest[0],) in self.modules:
            module, rest = module + (rest[0],), rest[1:]
        target = self.modules.get(module)
        if target is None:
            return None
        if rest and rest[0] in self.info[target]["reexports"] and depth < 8:
            again = self.resolve(self.info[target]["reexports"][rest[0]] + rest[1:], target,
                                 self.aliases(target), depth + 1)
            if again:
                return again
        return target

    def aliases(self, file):
        """Names a file imports that stand for modules of this crate."""
        out = {}
        for segs, alias in self.info[file]["uses"]:
            if not alias or segs[-1] == "*":
                continue
            start = self.base(segs, self.files[file], {})
            if start is None:
                continue
            module, rest = start
            while rest and module + (rest[0],) in self.modules:
                module, rest = module + (rest[0],), rest[1:]
            if not rest:
                out[alias] = module
        return out

    def edges(self):
        graph = {f: set() for f in self.files}
        for f in self.files:
            aliases = self.aliases(f)
            paths = [s for s, alias in self.info[f]["uses"]]
            for segs in paths:
                if segs[-1] == "*":
                    target = self.resolve(segs[:-1], f, aliases)
                elif segs[-1:] and (segs[-1] in aliases and len(segs) > 1):
                    continue  # a module imported by name; its uses below count
                else:
                    target = self.resolve(segs, f, aliases)
                if target and target != f:
                    graph[f].add(target)
            for segs in self.info[f]["body"]:
                if segs[0] in ("crate", "super", "self") or segs[0] in aliases or \
                        self.files[f] + (segs[0],) in self.modules:
                    target = self.resolve(segs, f, aliases)
                    if target and target != f:
                        graph[f].add(target)
        return graph


def components(graph):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    show_edges = "--edges" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    if not dirs:
        dirs = sorted(os.path.join("crates", d) for d in os.listdir("crates")
                      if os.path.isdir(os.path.join("crates", d, "src")))
    failed = False
    for d in dirs:
        src = os.path.join(d, "src")
        crate = Crate(src)
        graph = crate.edges()
        big = [c for c in components(graph) if len(c) > 2]
        rel = lambda f: os.path.relpath(f, src)
        if not big:
            print(f"{d}: {len(graph)} files, no import circle of more than two files")
            continue
        failed = True
        for comp in sorted(big, key=len, reverse=True):
            print(f"{d}: circle of {len(comp)} files: {' '.join(rel(f) for f in comp)}")
            if show_edges:
                members = set(comp)
                for f in comp:
                    inside = sorted(rel(t) for t in graph[f] if t in members)
                    print(f"    {rel(f)} -> {' '.join(inside)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
