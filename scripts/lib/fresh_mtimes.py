"""Cargo freshness by content for a target dir shared by several checkouts (see docs/testenv.md).

    fresh_mtimes.py cargo ARGS...   lock the target dir, restore mtimes, run `cargo ARGS...`, seal

Cargo decides whether a workspace crate is fresh by comparing its sources' modification times with
its last build. A new clone gives every file a new mtime, so every crate of the workspace compiles
again although nothing changed. This tool makes the working tree look like one long-lived checkout:
for every tracked file it keeps, beside the target dir, the git blob id of the content it last saw
and the time it first saw that content. A file whose content is unchanged gets that time back; a
file whose content is new gets "now" (later than every build so far) and becomes the new record.
So an artifact looks fresh only if it was built after its sources' contents were first seen, i.e.
from those contents, never from other ones.

That holds only if every build into the target dir starts with a restore; so the restore and the
cargo run share one lock, and each run ends with a seal (the time it ended). A cargo build outside
this tool (a `cargo build` with the same CARGO_TARGET_DIR; use scripts/cargo instead) is seen at
the next restore as a fingerprint newer than the seal: then every file is treated as changed (a
full rebuild of the workspace crates; slow but never wrong).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORD_VERSION = 1


def log(message: str) -> None:
    print(f"[fresh] {message}", file=sys.stderr, flush=True)


def target_dir() -> Path:
    configured = os.environ.get("CARGO_TARGET_DIR")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path(os.environ.get("HOME", "/root")) / ".cache")
    return Path(cache) / "ferry" / "target"


def blob_id(path: Path) -> str:
    """The git blob id of a file's content (what `git hash-object` prints)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tracked_files(repo: Path) -> list[str]:
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True, capture_output=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


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
    """What this target dir was last built from: per tracked path, [blob id, first-seen time]."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, list] = {}
        self.sealed_ns: int | None = None
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if doc.get("version") == RECORD_VERSION:
            self.files = doc.get("files", {})
            self.sealed_ns = doc.get("sealedNs")

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": RECORD_VERSION, "sealedNs": self.sealed_ns, "files": self.files}))
        os.replace(tmp, self.path)


def restore(repo: Path, target: Path, record: Record) -> None:
    started = time.monotonic()
    now = time.time_ns()
    newest = newest_fingerprint_ns(target)
    trusted = record.sealed_ns is not None and newest <= record.sealed_ns
    if not trusted and record.files:
        why = "the last run did not end" if record.sealed_ns is None else "something was built there without scripts/cargo"
        log(f"{target}: {why}; every workspace file counts as changed this time")
    kept = changed = 0
    files = {}
    for name in tracked_files(repo):
        path = repo / name
        if path.is_symlink() or not path.is_file():
            continue  # deleted in the working tree, or a link (its target is tracked itself)
        blob = blob_id(path)
        seen = record.files.get(name) if trusted else None
        if seen and seen[0] == blob:
            first_seen = seen[1]
            kept += 1
        else:
            first_seen = now
            changed += 1
        os.utime(path, ns=(first_seen, first_seen))
        files[name] = [blob, first_seen]
    record.files = files
    record.sealed_ns = None  # until the build that follows has ended
    record.save()
    log(f"{kept} files as built before, {changed} new or changed ({time.monotonic() - started:.1f}s)")


def seal(record: Record) -> None:
    record.sealed_ns = time.time_ns()
    record.save()


def locked(target: Path):
    target.mkdir(parents=True, exist_ok=True)
    lock = open(target / ".ferry-fresh.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def run_cargo(args: list[str], repo: Path = REPO, env: dict | None = None, **kwargs) -> int:
    """`cargo ARGS...` in `repo` with mtimes restored first, under the target dir's lock."""
    env = dict(env or os.environ)
    target = Path(env.get("CARGO_TARGET_DIR") or target_dir())
    env["CARGO_TARGET_DIR"] = str(target)
    with locked(target):
        record = Record(target / ".ferry-fresh.json")
        restore(repo, target, record)
        child = subprocess.Popen(["cargo", *args], cwd=repo, env=env, **kwargs)
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
