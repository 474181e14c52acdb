"""Cargo freshness by content for a target dir shared by several checkouts (see docs/testenv.md).

    fresh_mtimes.py cargo ARGS...   lock the target dir, sync the build tree, run `cargo ARGS...`, seal

Cargo decides whether a workspace crate is fresh by comparing its sources' modification times with
its last build, and rustc's incremental caches are only reused when the sources sit at the same
path as before. A new clone gives every file a new mtime and, in CI, a new path: every crate of
the workspace would compile again from scratch although nothing (or one line) changed. So cargo
never builds from the checkout itself but from one long-lived copy of it beside the target dir
(`<target>-src`, e.g. ~/.cache/ferry/target-src): before each run the checkout's files (tracked
and new, not ignored) are copied there, writing only files whose content differs from the copy's
(those, and only those, get a new mtime) and removing files the checkout no longer has. To cargo
and rustc every checkout is then the same long-lived one at the same path.

That holds only if every build into the target dir starts with a sync; so the sync and the cargo
run share one lock, and each run ends with a seal (the time it ended). A cargo build outside this
tool (a `cargo build` with the same CARGO_TARGET_DIR; use scripts/cargo instead) is seen at the
next sync as a fingerprint newer than the seal: then every file of the tree is touched (a full
rebuild of the workspace crates; slow but never wrong). Builds run from the tree, so a command
that writes sources (`cargo fmt`, `clippy --fix`) must run in the checkout, not through this tool.

Every build through this tool is also clippy's (`-D warnings`): rustc is run through
`clippy-driver` for the workspace's crates (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy` itself
does), so one compile both lints and builds them. A separate `cargo clippy` compiled every
dependency a second time, for its check mode (cold, ten minutes of two cores). Image builds opt
out (`lint=False`): they build the same sources for other targets, linted already.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORD_VERSION = 2


def log(message: str) -> None:
    print(f"[fresh] {message}", file=sys.stderr, flush=True)


def target_dir() -> Path:
    configured = os.environ.get("CARGO_TARGET_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path(os.environ.get("HOME", "/root")) / ".cache")
    return Path(cache) / "ferry" / "target"


def newest_fingerprint_ns(target: Path) -> int:
    """The newest mtime of any file cargo writes when it builds a unit: every `.fingerprint` dir of
    every profile and target triple."""
    newest = 0
    for fingerprints in [*target.glob("*/.fingerprint"), *target.glob("*/*/.fingerprint")]:
        for unit in os.scandir(fingerprints):
            if not unit.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(unit.path):
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime_ns)
    return newest


class Record:
    """When the last cargo run into this target dir ended (None while one runs or after a crash)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sealed_ns: int | None = None
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if doc.get("version") == RECORD_VERSION:
            self.sealed_ns = doc.get("sealedNs")

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": RECORD_VERSION, "sealedNs": self.sealed_ns}))
        os.replace(tmp, self.path)


def source_files(repo: Path) -> list[str]:
    """The checkout's files as git sees them: tracked ones and new ones not ignored."""
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    )
    return sorted({name for name in listed.stdout.decode().split("\0") if name})


def build_tree(target: Path) -> Path:
    """Where cargo builds from: one long-lived copy of whichever checkout builds into `target`."""
    return target.parent / f"{target.name}-src"


def same_file(source: Path, copy: Path) -> bool:
    try:
        if copy.is_symlink() or not copy.is_file():
            return False
        mine, theirs = source.stat(), copy.stat()
        if mine.st_size != theirs.st_size or (mine.st_mode & 0o777) != (theirs.st_mode & 0o777):
            return False
        return source.read_bytes() == copy.read_bytes()
    except OSError:
        return False


def make_room(copy: Path) -> None:
    """Clears `copy`'s place in the tree (a file, link or directory there before) and makes its parent."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    if copy.is_dir() and not copy.is_symlink():
        shutil.rmtree(copy)
    elif copy.is_symlink() or copy.exists():
        copy.unlink()


def sync(repo: Path, tree: Path, trusted: bool) -> None:
    """Makes `tree` hold exactly the checkout's files, writing only those whose content changed (so
    they, and only they, get a new mtime); when the last build is not trusted, every file is new."""
    started = time.monotonic()
    kept = changed = 0
    wanted = set()
    for name in source_files(repo):
        source, copy = repo / name, tree / name
        if source.is_symlink():
            link = os.readlink(source)
            wanted.add(name)
            if copy.is_symlink() and os.readlink(copy) == link and trusted:
                kept += 1
                continue
            make_room(copy)
            os.symlink(link, copy)
            changed += 1
            continue
        if not source.is_file():
            continue  # deleted in the working tree
        wanted.add(name)
        if same_file(source, copy):
            if trusted:
                kept += 1
                continue
            os.utime(copy)  # untrusted: content as before, but its build must be redone
            changed += 1
            continue
        make_room(copy)
        partial = copy.with_name(f".{copy.name}.ferry-sync")
        shutil.copyfile(source, partial)
        os.chmod(partial, source.stat().st_mode & 0o777)
        os.replace(partial, copy)
        changed += 1
    removed = 0
    for directory, subdirs, files in os.walk(tree, topdown=False):
        for entry in [*files, *(d for d in subdirs if os.path.islink(os.path.join(directory, d)))]:
            path = os.path.join(directory, entry)
            if os.path.relpath(path, tree) not in wanted:
                os.unlink(path)
                removed += 1
        if directory != str(tree) and not os.listdir(directory):
            os.rmdir(directory)
    log(f"{tree}: {kept} files as built before, {changed} new or changed, {removed} removed ({time.monotonic() - started:.1f}s)")


def prepare(repo: Path, target: Path, record: Record) -> Path:
    """Copies the checkout into the build tree (see the module's doc); returns the tree."""
    newest = newest_fingerprint_ns(target)
    tree = build_tree(target)
    trusted = record.sealed_ns is not None and newest <= record.sealed_ns and tree.is_dir()
    if not trusted and (tree.exists() or record.sealed_ns is not None):
        why = "the last run did not end" if record.sealed_ns is None else "something was built there without scripts/cargo"
        log(f"{target}: {why}; every workspace file counts as changed this time")
    tree.mkdir(parents=True, exist_ok=True)
    sync(repo, tree, trusted)
    record.sealed_ns = None  # until the build that follows has ended
    record.save()
    return tree


def seal(record: Record) -> None:
    record.sealed_ns = time.time_ns()
    record.save()


def locked(target: Path):
    target.mkdir(parents=True, exist_ok=True)
    lock = open(target / ".ferry-fresh.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def clippy_driver() -> str:
    """The toolchain's clippy-driver, beside its cargo (as `cargo clippy` finds it)."""
    found = subprocess.run(["rustup", "which", "clippy-driver"], capture_output=True, text=True)
    if found.returncode != 0 or not found.stdout.strip():
        sys.exit("[fresh] clippy-driver not found (rustup component add clippy): " + found.stderr.strip())
    return found.stdout.strip()


def linting(env: dict) -> dict:
    """`env` with the workspace's crates compiled by clippy-driver, warnings denied."""
    env["RUSTC_WORKSPACE_WRAPPER"] = clippy_driver()
    # cargo-clippy's own encoding of `cargo clippy -- -D warnings`.
    env["CLIPPY_ARGS"] = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    return env


def run_cargo(args: list[str], repo: Path = REPO, env: dict | None = None, lint: bool = True, **kwargs) -> int:
    """`cargo ARGS...` in the build tree, synced from `repo` first, under the target dir's lock;
    with `lint`, the workspace's crates are compiled by clippy-driver (`cargo clippy` and
    `cargo fmt` set up their own drivers and are left alone)."""
    env = dict(env or os.environ)
    target = Path(env.get("CARGO_TARGET_DIR") or target_dir())
    env["CARGO_TARGET_DIR"] = str(target)
    if lint and args[:1] not in (["clippy"], ["fmt"]):
        env = linting(env)
    with locked(target):
        record = Record(target / ".ferry-fresh.json")
        tree = prepare(repo, target, record)
        child = subprocess.Popen(["cargo", *args], cwd=tree, env=env, **kwargs)
        # An interrupted run still seals what cargo managed to finish: pass the signal on, wait.
        forward = lambda signum, _frame: child.send_signal(signum)  # noqa: E731
        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            status = child.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        seal(record)
    return status


def main() -> None:
    # The checkout is the one cargo runs in (scripts/cargo changes to the repository first).
    repo = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True, text=True).stdout.strip())
    if len(sys.argv) >= 2 and sys.argv[1] == "cargo":
        sys.exit(run_cargo(sys.argv[2:], repo=repo))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
