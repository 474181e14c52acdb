#!/usr/bin/env python3
"""Tests of the release helpers, scripts/release/krew-manifest and scripts/release/notes, run as
the release workflow runs them, and of scripts/release/action-pins, run as scripts/release/check
runs it: as programs, on fixtures written to a temporary directory. Also
that the workflow builds exactly the platforms the krew manifest lists. Standard library only;
scripts/release/check runs them:

    python3 -B scripts/release/test_release.py

The krew manifest is read back with a small strict parser of the YAML it is written in (block
mappings and sequences, `|` block scalars, double-quoted and plain scalars: anything else is an
error), and with PyYAML as well where it is installed.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KREW_MANIFEST = os.path.join(HERE, "krew-manifest")
NOTES = os.path.join(HERE, "notes")
ACTION_PINS = os.path.join(HERE, "action-pins")
VALIDATE_KREW = os.path.join(HERE, "validate-krew")
WORKFLOW = os.path.join(REPO, ".github", "workflows", "release.yml")

PLATFORMS = [(o, a) for o in ("linux", "darwin", "windows") for a in ("amd64", "arm64")]
URL_BASE = "https://github.com/ferry-dev/ferry/releases/download/v0.1.0"


def run(*args):
    """Runs a helper as a program (its #! line and executable bit included)."""
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60, check=False)


def archive(version, os_, arch):
    return f"kubectl-ferry_{version}_{os_}_{arch}." + ("zip" if os_ == "windows" else "tar.gz")


# --- a strict reader of the YAML subset the krew manifest is written in -------------------------

PLAIN_SCALAR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9./_-]*$")
KEY = re.compile(r"^([A-Za-z][A-Za-z0-9]*):(?: (.*))?$")


class MiniYamlError(ValueError):
    pass


class MiniYaml:
    def __init__(self, text):
        if not text.endswith("\n"):
            raise MiniYamlError("no newline at the end")
        if "\t" in text:
            raise MiniYamlError("a tab")
        self.lines = text[:-1].split("\n")
        self.i = 0

    def fail(self, why):
        raise MiniYamlError(f"line {self.i + 1}: {why}: {self.lines[min(self.i, len(self.lines) - 1)]!r}")

    @staticmethod
    def indent(line):
        return len(line) - len(line.lstrip(" "))

    def is_item(self, indent):
        line = self.lines[self.i]
        return self.indent(line) == indent and line[indent:].startswith("- ")

    def parse(self):
        value = self.node(0)
        if self.i != len(self.lines):
            self.fail("left over")
        return value

    def node(self, indent):
        return self.sequence(indent) if self.is_item(indent) else self.mapping(indent)

    def sequence(self, indent):
        items = []
        while self.i < len(self.lines) and self.is_item(indent):
            line = self.lines[self.i]
            # The item's first key sits on the dash line: read it as the first line of a mapping.
            self.lines[self.i] = line[:indent] + "  " + line[indent + 2:]
            items.append(self.mapping(indent + 2))
        return items

    def mapping(self, indent):
        result = {}
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                self.fail("a blank line outside a block scalar")
            if self.indent(line) < indent or self.is_item(indent):
                break
            if self.indent(line) > indent:
                self.fail("unexpected indentation")
            match = KEY.match(line[indent:])
            if not match:
                self.fail("not `key: value`")
            key, rest = match.groups()
            if key in result:
                self.fail(f"duplicate key {key}")
            self.i += 1
            if rest is None:
                if self.i == len(self.lines):
                    self.fail("a key without a value")
                next_indent = self.indent(self.lines[self.i])
                if self.is_item(indent):
                    result[key] = self.sequence(indent)
                elif next_indent > indent:
                    result[key] = self.node(next_indent)
                else:
                    self.fail("a key without a value")
            elif rest == "|":
                result[key] = self.block(indent)
            else:
                result[key] = self.scalar(rest)
        return result

    def block(self, indent):
        body = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and self.indent(line) <= indent:
                break
            body.append(line)
            self.i += 1
        while body and not body[-1].strip():
            body.pop()
        if not body:
            self.fail("an empty block scalar")
        margin = self.indent(body[0])
        if any(line.strip() and self.indent(line) < margin for line in body):
            self.fail("a block scalar line less indented than its first")
        return "\n".join(line[margin:] for line in body) + "\n"

    def scalar(self, text):
        if text.startswith('"'):
            try:
                value = json.loads(text)
            except ValueError:
                self.fail("a bad double-quoted string")
            if not isinstance(value, str):
                self.fail("not a string")
            return value
        if not PLAIN_SCALAR.match(text):
            self.fail("a plain scalar that needs quoting")
        return text


class MiniYamlTest(unittest.TestCase):
    def test_reads_the_subset(self):
        text = 'a: b\nc:\n  d: "e: f"\nl:\n- x: "1"\n  y: z\n- x: "2"\nt: |\n  one\n\n  two\nlast: v\n'
        self.assertEqual(
            MiniYaml(text).parse(),
            {"a": "b", "c": {"d": "e: f"}, "l": [{"x": "1", "y": "z"}, {"x": "2"}],
             "t": "one\n\ntwo\n", "last": "v"},
        )

    def test_refuses_what_is_not_in_it(self):
        for bad in ["a: b: c\n", "a: b\n  c: d\n", "a: b\na: c\n", "a:\n", "a: 'b'\n", "a:\tb\n",
                    "a: b", "a: [b]\n", 'a: "b\n']:
            with self.subTest(bad=bad), self.assertRaises(MiniYamlError):
                MiniYaml(bad).parse()


# --- krew-manifest ----------------------------------------------------------------------------


class KrewManifestTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ferry-release-test-")
        self.addCleanup(self.dir.cleanup)

    def archives(self, version="0.1.0", platforms=PLATFORMS):
        """Writes an archive (of distinct bytes) per platform; returns name -> sha256."""
        sums = {}
        for os_, arch in platforms:
            name = archive(version, os_, arch)
            data = f"not really an archive: {name}\n".encode()
            with open(os.path.join(self.dir.name, name), "wb") as f:
                f.write(data)
            sums[name] = hashlib.sha256(data).hexdigest()
        return sums

    def checksums(self, lines):
        path = os.path.join(self.dir.name, "checksums.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def sha256sum_lines(self, sums):
        return [f"{digest}  {name}" for name, digest in sorted(sums.items())]

    def manifest(self, version="v0.1.0", checksums=None, url_base=URL_BASE):
        if checksums is None:
            checksums = self.checksums(self.sha256sum_lines(self.archives()))
        return run(KREW_MANIFEST, "--version", version, "--checksums", checksums, "--url-base", url_base)

    def refused(self, result, *needles):
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stdout, "")
        for needle in needles:
            self.assertIn(needle, result.stderr)

    def test_the_manifest_lists_every_platform_with_its_archive_and_checksum(self):
        sums = self.archives()
        # As sha256sum prints them, in binary mode for some, with another file listed too.
        lines = self.sha256sum_lines(sums)
        lines[1] = lines[1].replace("  ", " *", 1)
        lines.append("0" * 64 + "  ferry.sbom.json")
        result = self.manifest(checksums=self.checksums(lines), url_base=URL_BASE + "/")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        doc = MiniYaml(result.stdout).parse()

        self.assertEqual(doc["apiVersion"], "krew.googlecontainertools.github.com/v1alpha2")
        self.assertEqual(doc["kind"], "Plugin")
        self.assertEqual(doc["metadata"], {"name": "ferry"})
        spec = doc["spec"]
        self.assertEqual(spec["version"], "v0.1.0")
        self.assertEqual(spec["homepage"], "https://github.com/ferry-dev/ferry")
        self.assertTrue(0 < len(spec["shortDescription"]) <= 50, spec["shortDescription"])
        self.assertIn("StatefulSet", spec["description"])
        self.assertIn("operator", spec["caveats"])
        self.assertIn("kubectl_complete-ferry", spec["caveats"])
        self.assertEqual(
            [(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"]) for p in spec["platforms"]],
            PLATFORMS,
        )
        for platform in spec["platforms"]:
            labels = platform["selector"]["matchLabels"]
            os_, arch = labels["os"], labels["arch"]
            name = archive("0.1.0", os_, arch)
            binary = "kubectl-ferry.exe" if os_ == "windows" else "kubectl-ferry"
            with self.subTest(platform=f"{os_}/{arch}"):
                self.assertEqual(set(platform), {"selector", "uri", "sha256", "bin", "files"})
                self.assertEqual(labels, {"os": os_, "arch": arch})
                self.assertEqual(platform["uri"], f"{URL_BASE}/{name}")
                self.assertEqual(platform["sha256"], sums[name])
                self.assertEqual(platform["bin"], binary)
                completion = binary.replace("kubectl-ferry", "kubectl_complete-ferry")
                self.assertEqual(
                    platform["files"],
                    [{"from": binary, "to": "."}, {"from": completion, "to": "."}, {"from": "LICENSE", "to": "."}],
                )

    def test_the_manifest_is_deterministic_and_parses_as_yaml(self):
        checksums = self.checksums(self.sha256sum_lines(self.archives()))
        first, second = self.manifest(checksums=checksums), self.manifest(checksums=checksums)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(first.stdout, second.stdout)
        self.assertTrue(first.stdout.startswith("apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\n"))
        try:
            import yaml  # noqa: PLC0415 (optional: not in the standard library)
        except ImportError:
            self.skipTest("PyYAML is not installed (the strict reader above checked the manifest)")
        self.assertEqual(yaml.safe_load(first.stdout), MiniYaml(first.stdout).parse())

    def test_a_prerelease_version(self):
        sums = self.archives(version="0.2.0-rc.1")
        result = self.manifest(version="v0.2.0-rc.1", checksums=self.checksums(self.sha256sum_lines(sums)))
        self.assertEqual(result.returncode, 0, result.stderr)
        spec = MiniYaml(result.stdout).parse()["spec"]
        self.assertEqual(spec["version"], "v0.2.0-rc.1")
        self.assertTrue(spec["platforms"][0]["uri"].endswith("/kubectl-ferry_0.2.0-rc.1_linux_amd64.tar.gz"))

    def test_refuses_a_missing_platform(self):
        sums = self.archives(platforms=[p for p in PLATFORMS if p != ("windows", "arm64")])
        result = self.manifest(checksums=self.checksums(self.sha256sum_lines(sums)))
        self.refused(result, "kubectl-ferry_0.1.0_windows_arm64.zip")
        self.assertNotIn("linux_amd64", result.stderr)

    def test_refuses_the_archives_of_another_version(self):
        result = self.manifest(version="v0.2.0")  # the archives are 0.1.0's
        self.refused(result, "kubectl-ferry_0.2.0_linux_amd64.tar.gz", "kubectl-ferry_0.2.0_windows_arm64.zip")

    def test_refuses_an_archive_of_no_platform(self):
        lines = self.sha256sum_lines(self.archives()) + ["1" * 64 + "  kubectl-ferry_0.1.0_linux_386.tar.gz"]
        self.refused(self.manifest(checksums=self.checksums(lines)), "kubectl-ferry_0.1.0_linux_386.tar.gz")

    def test_refuses_a_version_that_is_not_semver_with_a_v(self):
        for version in ["0.1.0", "v0.1", "v01.2.3", "v0.1.0-", "v0.1.0-01", "latest", "V0.1.0", "v0.1.0 "]:
            with self.subTest(version=version):
                self.refused(self.manifest(version=version), "not semver with a leading v", repr(version))

    def test_refuses_a_malformed_checksums_file(self):
        lines = self.sha256sum_lines(self.archives())
        for bad in ["abc  kubectl-ferry_0.1.0_linux_amd64.tar.gz", lines[0].replace("  ", "\t"), "garbage"]:
            with self.subTest(line=bad):
                self.refused(self.manifest(checksums=self.checksums(lines[1:] + [bad])), "not a sha256sum line")

    def test_refuses_a_checksums_file_that_is_not_there(self):
        self.refused(self.manifest(checksums=os.path.join(self.dir.name, "nope.txt")), "cannot read", "nope.txt")

    def test_refuses_a_url_base_that_is_no_url(self):
        self.refused(self.manifest(url_base="github.com/ferry-dev/ferry"), "not an http(s) URL")

    def test_arguments_are_required(self):
        result = run(KREW_MANIFEST, "--version", "v0.1.0")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--checksums", result.stderr)


# --- notes ------------------------------------------------------------------------------------

CHANGELOG = """\
# Changelog

All notable changes. The format follows [Keep a Changelog](https://keepachangelog.com/en/1.1.0/).

## [Unreleased]

### Added
- Something not released yet.

## [0.2.0] - 2026-02-01

### Changed
- Two point oh, with a `## not a heading` inside a line.

  A second paragraph of the same item.

### Fixed
- A fix ([#12]).

[#12]: https://github.com/ferry-dev/ferry/issues/12

## [0.1.0] - 2026-01-01

### Added
- The first release.

[Unreleased]: https://github.com/ferry-dev/ferry/compare/v0.2.0...HEAD
[0.2.0]: https://github.com/ferry-dev/ferry/compare/v0.1.0...v0.2.0
[0.1.0]: https://github.com/ferry-dev/ferry/releases/tag/v0.1.0
"""

NOTES_0_2_0 = """\
### Changed
- Two point oh, with a `## not a heading` inside a line.

  A second paragraph of the same item.

### Fixed
- A fix ([#12]).

[#12]: https://github.com/ferry-dev/ferry/issues/12
"""


class NotesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ferry-release-test-")
        self.addCleanup(self.dir.cleanup)
        self.changelog = self.write("CHANGELOG.md", CHANGELOG)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def notes(self, *args):
        return run(NOTES, *args)

    def ok(self, result, expected):
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertEqual(result.stdout, expected)

    def refused(self, result, *needles):
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stdout, "")
        for needle in needles:
            self.assertIn(needle, result.stderr)

    def test_a_version_between_two_others(self):
        self.ok(self.notes("0.2.0", self.changelog), NOTES_0_2_0)

    def test_a_tag_names_the_same_version(self):
        self.ok(self.notes("v0.2.0", self.changelog), NOTES_0_2_0)

    def test_the_last_version_without_the_compare_links(self):
        self.ok(self.notes("0.1.0", self.changelog), "### Added\n- The first release.\n")

    def test_unreleased(self):
        self.ok(self.notes("--unreleased", self.changelog), "### Added\n- Something not released yet.\n")

    def test_refuses_a_missing_version(self):
        self.refused(self.notes("0.3.0", self.changelog), "no section for version 0.3.0", "Unreleased, 0.2.0, 0.1.0")
        self.refused(self.notes("0.2", self.changelog), "no section for version 0.2")

    def test_refuses_a_missing_unreleased_section(self):
        path = self.write("released.md", CHANGELOG.replace("## [Unreleased]", "## Unreleased work"))
        self.refused(self.notes("--unreleased", path), "no section for [Unreleased]")

    def test_refuses_an_empty_section(self):
        path = self.write("empty.md", "# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-01-01\n\n- one\n")
        self.refused(self.notes("--unreleased", path), "is empty")
        self.ok(self.notes("0.1.0", path), "- one\n")

    def test_refuses_a_version_there_twice(self):
        path = self.write("twice.md", CHANGELOG + "\n## [0.1.0] - 2026-03-01\n\n- again\n")
        self.refused(self.notes("0.1.0", path), "2 sections")

    def test_refuses_a_changelog_that_is_not_there(self):
        self.refused(self.notes("0.1.0", os.path.join(self.dir.name, "nope.md")), "cannot read", "nope.md")

    def test_usage_errors(self):
        for args in [(), ("0.1.0", self.changelog, "extra")]:
            with self.subTest(args=args):
                result = self.notes(*args)
                self.assertEqual(result.returncode, 2)
                self.assertIn("usage: notes VERSION [CHANGELOG]", result.stderr)

    def test_the_default_changelog_is_the_repositorys(self):
        with_path = self.notes("--unreleased", os.path.join(REPO, "CHANGELOG.md"))
        without = subprocess.run([NOTES, "--unreleased"], capture_output=True, text=True, timeout=60,
                                 check=False, cwd=self.dir.name)
        self.assertEqual((without.returncode, without.stdout), (with_path.returncode, with_path.stdout))


# --- action-pins --------------------------------------------------------------------------------

SHA = "d23441a48e516b6c34aea4fa41551a30e30af803"
PINNED = f"""\
jobs:
  build:
    steps:
      - uses: actions/checkout@{SHA} # v6.1.0
        with:
          persist-credentials: false
      - name: local
        uses: ./.github/actions/setup
      - uses: "docker/login-action@{SHA[::-1]}"  # v4.1.0
      - uses: docker://alpine@sha256:{"a" * 64}
"""


class ActionPinsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def workflow(self, text, name="ci.yml"):
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def refused(self, text, *needles):
        result = run(ACTION_PINS, self.workflow(text))
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        for needle in needles:
            self.assertIn(needle, result.stderr)

    def test_pins_by_sha_with_their_release_pass_and_become_major_tags_for_actionlint(self):
        out = os.path.join(self.dir.name, "tags")
        os.mkdir(out)
        result = run(ACTION_PINS, "--tags-into", out, self.workflow(PINNED))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("4 uses in 1 workflow(s)", result.stdout)
        with open(os.path.join(out, "ci.yml"), encoding="utf-8") as f:
            tagged = f.read()
        expected = (PINNED.replace(f"actions/checkout@{SHA} # v6.1.0", "actions/checkout@v6")
                    .replace(f'"docker/login-action@{SHA[::-1]}"  # v4.1.0', '"docker/login-action@v4"'))
        self.assertEqual(tagged, expected)

    def test_refuses_a_tag(self):
        self.refused(PINNED.replace(f"@{SHA} # v6.1.0", "@v6"), "ci.yml:4: actions/checkout@v6", "full commit SHA")

    def test_refuses_a_short_sha(self):
        self.refused(PINNED.replace(f"@{SHA}", f"@{SHA[:12]}"), "ci.yml:4:", "full commit SHA")

    def test_refuses_a_sha_without_its_release(self):
        for comment in ["", " # v6", " # main", " # 6.1.0"]:
            with self.subTest(comment=comment):
                self.refused(PINNED.replace(f"@{SHA} # v6.1.0", f"@{SHA}{comment}"), "ci.yml:4:", "# vX.Y.Z")

    def test_refuses_a_docker_image_by_tag(self):
        self.refused(PINNED.replace(f"alpine@sha256:{'a' * 64}", "alpine:3.20"), "ci.yml:10:", "by digest")

    def test_reports_every_offence_of_every_workflow(self):
        first = self.workflow(PINNED.replace(f"@{SHA} # v6.1.0", "@v6"), "a.yml")
        second = self.workflow(PINNED.replace(f"@{SHA[::-1]}", "@v4"), "b.yml")
        result = run(ACTION_PINS, first, second)
        self.assertEqual(result.returncode, 1)
        self.assertEqual([line.split(": ")[1] for line in result.stderr.splitlines()],
                         [f"{first}:4", f"{second}:9"])

    def test_the_release_workflow_is_pinned(self):
        result = run(ACTION_PINS, WORKFLOW)
        self.assertEqual(result.returncode, 0, result.stderr)


# --- the workflow and the helpers together ----------------------------------------------------


class WorkflowTest(unittest.TestCase):
    def setUp(self):
        with open(WORKFLOW, encoding="utf-8") as f:
            self.workflow = f.read()

    def test_the_plugin_matrix_builds_the_platforms_of_the_krew_manifest(self):
        built = re.findall(r"^\s*- \{os: (\w+), arch: (\w+),", self.workflow, flags=re.M)
        self.assertEqual(sorted(built), sorted(PLATFORMS))
        self.assertIn(
            "ARCHIVE: kubectl-ferry_${{ needs.meta.outputs.version }}_${{ matrix.os }}_${{ matrix.arch }}",
            self.workflow,
        )

    def test_the_workflow_runs_both_helpers(self):
        self.assertIn("scripts/release/krew-manifest --version", self.workflow)
        self.assertIn('scripts/release/notes "$VERSION" CHANGELOG.md', self.workflow)

    def test_the_helpers_are_executable(self):
        for path in (KREW_MANIFEST, NOTES, ACTION_PINS, VALIDATE_KREW, os.path.join(HERE, "check")):
            with self.subTest(path=path):
                self.assertTrue(os.access(path, os.X_OK))


def main():
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    print(f"release: {result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped", flush=True)
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
