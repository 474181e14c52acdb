"""Import circles among sibling modules of a crate (issue 57).

At every level of a crate's module tree, the child modules of one module, each with its own
submodules, are rooms. A path written in a file of room A (`use crate::…`, `super::…`,
`self::…`, or such a path inline in code) that names a module of sibling room B, or an item of
it, is an arrow A → B; a name a module re-exports (or imports, for its children) makes a second
arrow, to where it comes from (through globs too). A circle of arrows among siblings is an import
circle. A module and its ancestors or descendants are never rooms of one level: `use super::*`
from a child is no circle. Test code is not counted.
"""
import os
from collections import defaultdict

import rust_source

ROOTS = ("lib.rs", "main.rs")
# Names followed from re-export to re-export before giving up: far more than any chain in Ferry.
MAX_HOPS = 8


def crate_roots(crate_src):
    """The root file of each of the crate's targets: library, binary, `src/bin/*`."""
    roots = [os.path.join(crate_src, name) for name in ROOTS]
    bin_dir = os.path.join(crate_src, "bin")
    if os.path.isdir(bin_dir):
        roots += [os.path.join(bin_dir, name) for name in sorted(os.listdir(bin_dir))]
    return [root for root in roots if root.endswith(".rs") and os.path.isfile(root)]


def module_tree(root):
    """Every module declared from the root file on, by path (`()` is the root): (file, code)."""
    modules, pending = {}, [((), root)]
    while pending:
        path, file = pending.pop()
        with open(file, encoding="utf-8") as source:
            text = source.read()
        code = rust_source.product_code(text)
        modules[path] = (file, code)
        for name, override in rust_source.declared_modules(text, code):
            child = child_file(file, name, override)
            # None only for code that does not compile; the compiler says so better.
            if child:
                pending.append((path + (name,), child))
    return modules


def child_file(file, name, override):
    """The file of module `name` declared in `file`, as the compiler finds it."""
    if override:
        return os.path.join(os.path.dirname(file), override)
    directory, stem = os.path.split(file[:-3])
    base = directory if stem in ("lib", "main", "mod") else os.path.join(directory, stem)
    for candidate in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
        if os.path.isfile(candidate):
            return candidate
    return None


class Scope:
    """What one module's top level names: its items, the names its `use`s bind, its globs."""

    def __init__(self, path, code):
        self.items = rust_source.defined_names(code)
        self.bound, self.globs = {}, []
        for segments, name, depth in rust_source.uses(code):
            if depth == 0 and name == "*":
                self.globs.append((path, segments[:-1]))
            elif depth == 0 and name != "_":
                self.bound[name] = (path, segments)

    def names(self, name):
        """Whether the module has `name` itself, as an item or a binding."""
        return name in self.items or name in self.bound


def anchor(here, segments):
    """The module a path starts from, written in module `here`, and the rest of the path."""
    if segments[0] == "crate":
        return (), segments[1:]
    if segments[0] == "self":
        return here, segments[1:]
    ups = next((i for i, segment in enumerate(segments) if segment != "super"), len(segments))
    return here[: max(len(here) - ups, 0)], segments[ups:]


def resolve(modules, scopes, here, segments, hops=0):
    """The module a path names, or names an item of, and whether it names that module itself."""
    module, rest = anchor(here, segments)
    for name in rest:
        if module + (name,) in modules:
            module = module + (name,)
            continue
        scope = scopes[module]
        binding = scope.bound.get(name) or through_glob(modules, scopes, module, name, hops)
        if binding is None or hops >= MAX_HOPS:
            return module, False
        module, whole = resolve(modules, scopes, *binding, hops + 1)
        if not whole:
            return module, False
    return module, True


def through_glob(modules, scopes, module, name, hops):
    """The binding a glob `use` of `module` gives `name`, when one of its sources has it."""
    for binder, segments in scopes[module].globs if hops < MAX_HOPS else ():
        source, whole = resolve(modules, scopes, binder, segments, hops + 1)
        if whole and (scopes[source].names(name) or source + (name,) in modules):
            return source, ["self", name]
    return None


def written_module(modules, here, segments):
    """The module a path names as written, before any re-export is followed."""
    module, rest = anchor(here, segments)
    for name in rest:
        if module + (name,) not in modules:
            break
        module = module + (name,)
    return module


def arrows(modules):
    """Every (from module, to module, path written) of paths that leave the file they are in: to
    the module the path is written through, and to the one its item comes from."""
    scopes = {path: Scope(path, code) for path, (_, code) in modules.items()}
    for here, (_, code) in sorted(modules.items()):
        for segments in rust_source.named_paths(code):
            origin, _ = resolve(modules, scopes, here, segments)
            for target in sorted({written_module(modules, here, segments), origin} - {here}):
                yield here, target, "::".join(segments)


def room_arrows(modules):
    """The arrows between sibling rooms, by level: {parent: {(room, room): [file arrows]}}."""
    levels = defaultdict(lambda: defaultdict(list))
    for source, target, written in arrows(modules):
        shared = common_length(source, target)
        if shared < len(source) and shared < len(target):
            rooms = (source[shared], target[shared])
            levels[source[:shared]][rooms].append((source, target, written))
    return levels


def common_length(one, other):
    """How many leading segments two module paths share."""
    pairs = enumerate(zip(one, other))
    return next((i for i, (a, b) in pairs if a != b), min(len(one), len(other)))


def circles(pairs):
    """Each set of rooms that reach one another through `pairs`, sorted, in a sorted list."""
    graph = defaultdict(set)
    for source, target in pairs:
        graph[source].add(target)
    reach = {room: reachable(graph, room) for room in graph}
    found = set()
    for room, seen in reach.items():
        if room in seen:
            found.add(tuple(sorted(other for other in seen if room in reach.get(other, ()))))
    return sorted(found)


def reachable(graph, start):
    """Every room one or more arrows away from `start`."""
    seen, pending = set(), list(graph[start])
    while pending:
        room = pending.pop()
        if room not in seen:
            seen.add(room)
            pending += graph.get(room, ())
    return seen


def report(modules, level, circle, pairs):
    """What to print for one circle: the rooms, then each file arrow that closes it."""
    where = "::".join(("crate",) + level)
    lines = [f"import circle in {where} among {', '.join(circle)}:"]
    shown = {}
    for (source_room, target_room), behind in sorted(pairs.items()):
        if source_room in circle and target_room in circle:
            for source, target, written in behind:
                shown.setdefault((modules[source][0], modules[target][0]), written)
    lines += [f"  {source} -> {target} ({written})" for (source, target), written in shown.items()]
    return lines


def circle_problems(crate_src):
    """Each import circle of the crate's targets, as the lines that describe it."""
    problems = []
    for root in crate_roots(crate_src):
        modules = module_tree(root)
        for level, pairs in sorted(room_arrows(modules).items()):
            for circle in circles(pairs):
                problems.append(report(modules, level, circle, pairs))
    return problems
