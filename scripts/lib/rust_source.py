"""Rust source read just well enough for the house check: its code without comments, literals
and test items, the modules it declares and the paths it names. Not a parser: enough for Ferry."""
import re

# One alternation scanned left to right, so that a `//` inside a string stays part of the string.
NOISE = re.compile(
    r"//[^\n]*"
    r"|/\*.*?\*/"
    r'|(?<!\w)b?r(#*)".*?"\1'
    r'|(?<!\w)b?"(?:\\.|[^"\\])*"'
    # A char literal; `'a` alone is a lifetime and stays.
    r"|(?<!\w)b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'",
    re.S,
)
TEST_ITEM = re.compile(r"#\[cfg\(test\)\]")
USE = re.compile(r"(?<![\w$])use\s+([^;]+);")
# A path from this crate's root or from the module it is written in, outside a `use`.
INLINE_PATH = re.compile(r"(?<![\w$:])(?:crate|self|super)(?:::\w+)+")
MOD = re.compile(r"(?<![\w$])mod\s+(\w+)\s*;")
# An item's name; `const fn f` names `f`, `static mut X` names `X`.
ITEM = re.compile(
    r"(?<![\w$])(?:struct|enum|union|trait|type|fn|const(?!\s+fn\b)|static(?:\s+mut)?)\s+(\w+)"
)
PATH_ATTRIBUTE = re.compile(
    r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;'
)


def product_code(text):
    """The code of `text` without comments, literals and the items under `#[cfg(test)]`."""
    code = NOISE.sub(lambda match: " " + "\n" * match.group(0).count("\n"), text)
    kept, position = [], 0
    for match in TEST_ITEM.finditer(code):
        if match.start() >= position:
            kept.append(code[position : match.start()])
            position = item_end(code, match.end())
    kept.append(code[position:])
    return "".join(kept)


def item_end(code, start):
    """Where the item beginning at `start` ends: after its `;`, `,` or closing brace."""
    depth = 0
    for index in range(start, len(code)):
        char = code[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return index
            if depth == 0 and char == "}":
                return index + 1
        elif char in ";," and depth == 0:
            return index + 1
    return len(code)


def declared_modules(text, code):
    """Each `mod name;` of the file's top level, with its `#[path]` when it has one."""
    paths = {name: path for path, name in PATH_ATTRIBUTE.findall(text)}
    return [(name, paths.get(name)) for name, depth in at_depths(code, MOD) if depth == 0]


def defined_names(code):
    """The names of the items the file defines at its top level."""
    return {name for name, depth in at_depths(code, ITEM) if depth == 0}


def named_paths(code):
    """Every path the code names through `use` or from `crate`, `self` or `super`, as segments."""
    paths = [segments for segments, _, _ in uses(code)]
    paths += [match.split("::") for match in INLINE_PATH.findall(code)]
    return paths


def uses(code):
    """Each path a `use` brings in: its segments, the name it binds, the brace depth it is at."""
    for tree, depth in at_depths(code, USE):
        tokens = re.findall(r"::|[{},*]|\w+", tree)
        for segments, alias in use_tree(tokens, 0, [])[0]:
            if segments and segments[-1] == "self":
                segments = segments[:-1]
            if segments:
                yield segments, alias or segments[-1], depth


def at_depths(code, pattern):
    """Each match's first group, with the depth of braces it stands in."""
    depth, position = 0, 0
    for match in pattern.finditer(code):
        between = code[position : match.start()]
        depth += between.count("{") - between.count("}")
        position = match.start()
        yield match.group(1), depth


def use_tree(tokens, index, prefix):
    """The paths of the use tree at `tokens[index]`, as (segments, alias), and where it ends."""
    segments = list(prefix)
    while index < len(tokens) and tokens[index] not in (",", "}"):
        token = tokens[index]
        if token == "{":
            return use_group(tokens, index + 1, segments)
        if token == "as" and index + 1 < len(tokens):
            return [(segments, tokens[index + 1])], index + 2
        if token != "::":
            segments.append(token)
        index += 1
    return [(segments, None)], index


def use_group(tokens, index, prefix):
    """The paths of `{a, b::c, ...}` after `prefix`, and the index after its closing brace."""
    paths = []
    while index < len(tokens) and tokens[index] != "}":
        if tokens[index] == ",":
            index += 1
            continue
        more, index = use_tree(tokens, index, prefix)
        paths += more
    return paths, index + 1
