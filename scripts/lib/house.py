#!/usr/bin/env python3
"""The house rules every controller's shape rests on, checked (issue 28):

- no import circle between the top-level modules of a crate (`crate::a` in module b and
  `crate::b` in module a, directly or through others);
- no function of product code over 80 lines, except flat matches listed in FLAT (one arm per
  kind, nothing to cut by stage).

Benchmarks, tests and test modules are not product code. Exits 1 with what breaks a rule.
"""
import os
import re
import sys
from collections import defaultdict

LIMIT = 80
# A `match` with one arm per action kind, or a list of registrations: long, but flat.
FLAT = {
    ("crates/operator/src/resize/execute.rs", "carry_out"),
    ("crates/operator/src/metrics.rs", "default"),
}


def product_files(crate_src):
    for root, _, files in os.walk(crate_src):
        for name in files:
            if name.endswith(".rs") and not name.endswith("tests.rs"):
                yield os.path.join(root, name)


def without_tests(text):
    return re.split(r"^#\[cfg\(test\)\]", text, flags=re.M)[0]


def long_functions(path):
    lines = without_tests(open(path, encoding="utf-8").read()).split("\n")
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)(pub(\([^)]*\))? )?(async )?(const )?fn (\w+)", line)
        if not match:
            continue
        indent = match.group(1)
        end = next((j for j in range(i, len(lines)) if lines[j] == indent + "}"), i)
        if end - i + 1 > LIMIT:
            yield match.group(6), end - i + 1


def top_module(crate_src, path):
    parts = os.path.relpath(path, crate_src)[:-3].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return None if parts in (["lib"], ["main"]) else parts[0]


def circles(crate_src):
    edges = defaultdict(set)
    modules = set()
    for path in product_files(crate_src):
        top = top_module(crate_src, path)
        if top is None:
            continue
        modules.add(top)
        text = without_tests(open(path, encoding="utf-8").read())
        text = "\n".join(l for l in text.split("\n") if not l.strip().startswith("//"))
        named = set(re.findall(r"crate::(\w+)", text))
        for group in re.findall(r"use crate::\{([^}]*)\}", text):
            named.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        edges[top].update(name for name in named if name != top)
    # Tarjan's strongly connected components: each of more than one module is a circle.
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v] & modules:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def main():
    problems = []
    for crate in sorted(os.listdir("crates")):
        crate_src = os.path.join("crates", crate, "src")
        if not os.path.isdir(crate_src):
            continue
        for circle in circles(crate_src):
            problems.append(f"{crate}: import circle between modules {', '.join(circle)}")
        for path in sorted(product_files(crate_src)):
            for name, length in long_functions(path):
                if (path, name) not in FLAT:
                    problems.append(f"{path}: fn {name} is {length} lines (over {LIMIT}: cut it by stage)")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
