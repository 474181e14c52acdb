#!/usr/bin/env python3
"""The house rules every controller's shape rests on, checked (issues 28 and 57):

- no import circle among sibling modules, at any level of a crate's module tree (`super::b` in
  module a and `super::a` in module b, directly or through others; see import_circles.py);
- no function of product code over 80 lines, except flat matches listed in FLAT (one arm per
  kind, nothing to cut by stage).

Benchmarks, tests and test modules are not product code. Exits 1 with what breaks a rule.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import import_circles  # noqa: E402

LIMIT = 80
# A `match` with one arm per action kind, or a list of registrations: long, but flat.
FLAT = {
    ("crates/operator/src/resize/apply.rs", "carry_out"),
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


def main():
    problems = []
    for crate in sorted(os.listdir("crates")):
        crate_src = os.path.join("crates", crate, "src")
        if not os.path.isdir(crate_src):
            continue
        for lines in import_circles.circle_problems(crate_src):
            problems.append(f"{crate}: " + "\n".join(lines))
        for path in sorted(product_files(crate_src)):
            for name, length in long_functions(path):
                if (path, name) not in FLAT:
                    problems.append(f"{path}: fn {name} is {length} lines (over {LIMIT}: cut it by stage)")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
