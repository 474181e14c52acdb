"""The chart's README (what `helm show readme deploy/helm/ferry` prints), generated from the chart
itself: every value of values.schema.json with its type and limits, its default from values.yaml,
and what it does from the schema's description or, where the schema has none, the values table of
docs/install.md. Run by scripts/manifests; with --check (CI) it fails when the file is stale.

    python3 -B scripts/lib/chart_readme.py [--check]
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy/helm/ferry"
README = CHART / "README.md"
INSTALL = REPO / "docs/install.md"


def chart_meta() -> dict:
    """Chart.yaml's top-level scalars (`key: value`, quotes dropped)."""
    meta = {}
    for line in (CHART / "Chart.yaml").read_text().splitlines():
        found = re.match(r"^(\w+):\s*(.*?)\s*$", line)
        if found and found.group(2):
            meta[found.group(1)] = found.group(2).strip('"')
    return meta


def chart_values() -> dict:
    """values.yaml as helm reads it, as JSON: rendered by the test bed's helm through a template of
    `.Values | toJson` in a copy of the chart (no YAML library needed)."""
    built = subprocess.run([str(REPO / "scripts/k8s/build.sh")], check=True, stdout=subprocess.PIPE, text=True)
    helm = Path(built.stdout.strip()) / "helm"
    with tempfile.TemporaryDirectory() as work:
        chart = Path(work) / "ferry"
        shutil.copytree(CHART, chart)
        (chart / "templates/zz-values.json").write_text("{{ .Values | toJson }}\n")
        rendered = subprocess.run(
            [str(helm), "template", "values", str(chart), "--kube-version", "1.34.0", "--show-only", "templates/zz-values.json"],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
            env={"PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": f"{work}/cache", "HELM_CONFIG_HOME": f"{work}/config", "HELM_DATA_HOME": f"{work}/data"},
        ).stdout
    document = next(line for line in rendered.splitlines() if line.startswith("{"))
    return json.loads(document)


def install_descriptions() -> dict[str, str]:
    """Each value named in a row of docs/install.md's values table (`| `a`, `b` | default | what |`),
    and the row's text."""
    described: dict[str, str] = {}
    for line in INSTALL.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        for key in re.findall(r"`([A-Za-z][\w.\[\]]*)`", cells[0]):
            described.setdefault(key, cells[-1])
    return described


def type_of(schema: dict, definitions: dict) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return type_of(definitions.get(name, {}), definitions) or name
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    if "oneOf" in schema or "anyOf" in schema:
        return " or ".join(type_of(option, definitions) for option in schema.get("oneOf", schema.get("anyOf", [])))
    kind = schema.get("type", "")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        return f"array of {type_of(schema.get('items', {}), definitions) or 'any'}"
    limits = []
    for word, name in [("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"), ("pattern", "matching")]:
        if word in schema:
            limits.append(f"{name} `{schema[word]}`")
    return kind + (f" ({', '.join(limits)})" if limits else "")


def default_of(values: dict, path: list[str]) -> str:
    node = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return "—"
        node = node[part]
    text = json.dumps(node, ensure_ascii=False)
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}…`"


def rows(schema: dict, definitions: dict, values: dict, described: dict[str, str], path: list[str]):
    for name, prop in schema.get("properties", {}).items():
        here = [*path, name]
        key = ".".join(here)
        if "$ref" in prop and "properties" not in prop:
            target = definitions.get(prop["$ref"].rsplit("/", 1)[-1], {})
            if "properties" in target:
                prop = target
        if prop.get("properties"):
            yield from rows(prop, definitions, values, described, here)
            continue
        what = prop.get("description") or described.get(key) or nearest(described, here)
        cells = [f"`{key}`", type_of(prop, definitions), default_of(values, here), " ".join(what.split())]
        yield "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def nearest(described: dict[str, str], path: list[str]) -> str:
    """The text of the closest enclosing value the install table describes."""
    for end in range(len(path) - 1, 0, -1):
        key = ".".join(path[:end])
        if key in described:
            return described[key]
    return ""


def render() -> str:
    meta = chart_meta()
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = chart_values()
    definitions = schema.get("definitions", {})
    out = [
        "<!-- Generated by scripts/lib/chart_readme.py from values.schema.json, values.yaml and docs/install.md;",
        "     `scripts/manifests` writes it and CI checks it. Do not edit. -->",
        f"# {meta['name']} {meta['version']}",
        "",
        meta.get("description", ""),
        "",
        "```sh",
        "helm install ferry deploy/helm/ferry --namespace ferry-system --create-namespace",
        "kubectl -n ferry-system rollout status deploy/ferry",
        "helm test ferry --namespace ferry-system   # CRDs served, /readyz, the webhook reached",
        "```",
        "",
        f"Kubernetes {meta.get('kubeVersion', '')}; image tag {meta.get('appVersion', '')}. Installing,",
        "upgrading and removing: docs/install.md and docs/upgrade.md in the repository.",
        "",
        "## Values",
        "",
        "Every value is checked by the chart's `values.schema.json`: a bad one fails `helm install` with",
        "the schema's message.",
        "",
        "| value | type | default | what |",
        "|---|---|---|---|",
        *rows(schema, definitions, values, install_descriptions(), []),
        "",
    ]
    return "\n".join(out)


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        if not README.exists() or README.read_text() != text:
            print(f"{README.relative_to(REPO)} is stale: run scripts/manifests", file=sys.stderr)
            return 1
        return 0
    README.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
