"""Builds every test binary of the workspace once and runs them side by side (see docs/testenv.md).

    run_tests.py build                  build the binaries and the test binaries (one cargo run)
    run_tests.py run [-- ARGS...]       build, then run every test binary; ARGS go to each binary
                                        (a name filter, --ignored, ...)

One cargo invocation, one profile, one feature set (`cargo test --workspace --no-run --features
ferry-mover/test-hooks`) builds the test binaries and the workspace's binaries the tests and the
control plane run (`ferry`, `ferry-mover`, `ferry-testenv`, `kubectl-ferry`), so each crate compiles
once. `cargo test` would then run the test binaries one after another; here the end-to-end binaries
run first, side by side, with more test threads. End-to-end tests in a module `alone` (a kubelet
restart, an operator watching every namespace) would disturb every other test on the shared control
plane and real node: they run one at a time once the other end-to-end tests have ended (those in
`alone::last` after all the others, of every binary: their aftermath slows the next), and the
binaries that need no cluster (the mover's, the unit tests) run beside them: their CPU would
otherwise slow the cluster's tests, while the alone tests mostly wait. Each binary's output is
printed whole when it ends, in the form `cargo test` prints ("Running ...", "test result: ..."),
then a table of how long each took and the slowest end-to-end tests.

Each binary leads a process group of its own: whatever a test left running is killed (and named)
when the binary ends, and a binary still running after FERRY_TEST_TIMEOUT seconds (default 1800) is
killed and fails, with what it printed so far (libtest names tests running over 60 s).

FERRY_TEST_JOBS (default 3) binaries at a time; FERRY_E2E_THREADS (default 4) test threads in each
end-to-end binary (the others use libtest's default, one per core); FERRY_TEST_NICE (default 10)
the niceness of the binaries that are not end-to-end ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fresh_mtimes  # noqa: E402

RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
TIMED = re.compile(r"^test (\S+) \.\.\. (\w+) <([\d.]+)s>")
SLOWEST = 12
# End-to-end tests in a module of this name run alone, after all the others (run_alone).
ALONE = "alone::"
# Of those, the ones in this module run after every other test that runs alone, of every binary:
# the controller-manager is still cleaning up after them when they end.
ALONE_LAST = "alone::last::"
# One binary's output at a time: the alone tests and the others end side by side.
PRINTING = threading.Lock()
# What `cargo test` builds, and the benchmarks beside it: `--test '*'` names every integration test
# target, the `test = false` ones too, so that clippy sees them (built here, never run).
BENCHMARKS = ["bench_downtime", "bench_real_node"]
BUILD_ARGS = [
    "test", "--workspace", "--no-run", "--locked", "--features", "ferry-mover/test-hooks",
    "--lib", "--bins", "--test", "*",
]


@dataclass
class TestBinary:
    package: str
    target: str
    kind: str
    executable: str
    manifest_dir: str
    output: str = ""
    status: int | None = None
    seconds: float = 0.0
    summary: str = field(default="")

    @property
    def name(self) -> str:
        return f"{self.package} {self.kind} {self.target}"

    @property
    def end_to_end(self) -> bool:
        return self.target == "e2e"


def package_name(package_id: str) -> str:
    """`path+file:///r/crates/api#ferry-api@0.1.0` -> ferry-api; `.../crates/mover#0.1.0` -> mover."""
    url, _, fragment = package_id.partition("#")
    return fragment.split("@")[0] if "@" in fragment else url.rstrip("/").split("/")[-1]


def in_checkout(path: Path) -> Path:
    """A path cargo reported in the build tree (fresh_mtimes.py), as the same path in this checkout."""
    tree = fresh_mtimes.build_tree(fresh_mtimes.target_dir())
    try:
        return fresh_mtimes.REPO / path.relative_to(tree)
    except ValueError:
        return path


def build() -> list[TestBinary]:
    """Runs the one build; returns the test binaries it made, end-to-end ones first."""
    with tempfile.TemporaryFile() as messages:
        status = fresh_mtimes.run_cargo([*BUILD_ARGS, "--message-format=json-render-diagnostics"], stdout=messages)
        if status != 0:
            sys.exit(f"[tests] the build failed (cargo exit {status})")
        messages.seek(0)
        binaries = []
        for line in messages:
            message = json.loads(line)
            if message.get("reason") != "compiler-artifact" or not message.get("executable"):
                continue
            if not message["profile"]["test"]:
                continue
            target = message["target"]
            if target["name"] in BENCHMARKS:
                continue
            binaries.append(
                TestBinary(
                    package=package_name(message["package_id"]),
                    target=target["name"],
                    kind=target["kind"][0],
                    executable=message["executable"],
                    manifest_dir=str(in_checkout(Path(message["manifest_path"]).parent)),
                )
            )
    binaries.sort(key=lambda b: (not b.end_to_end, b.package, b.target))
    return binaries



def invoke(binary: TestBinary, args: list[str]) -> tuple[int, str]:
    """Runs the test binary with `args` as `cargo test` would; its exit status and output."""
    # What `cargo test` gives a test binary: its package directory as working directory and
    # CARGO_MANIFEST_DIR (the tests find the repository and the chart from it).
    env = dict(os.environ, CARGO_MANIFEST_DIR=binary.manifest_dir, CARGO_PKG_NAME=binary.package)
    if binary.end_to_end:
        # Each end-to-end test's time on its result line ("ok <12.345s>"), to see what makes the
        # CI's length; libtest offers it on a stable toolchain only with RUSTC_BOOTSTRAP.
        args = ["-Z", "unstable-options", "--report-time", *args]
        env["RUSTC_BOOTSTRAP"] = "1"
    # The operator's end-to-end binary is the run's length, and it and the control plane it waits
    # on are short of CPU while the other binaries run beside them: those get the cores' idle
    # share first (a lower priority, never a stop; FERRY_TEST_NICE, 0 turns it off). Measured, the
    # gain is within the run-to-run spread (docs/testenv.md, 2026-11-28).
    # `nice` execs the binary (no `preexec_fn`: unsafe in a process with threads, as this one is).
    niceness = 0 if binary.end_to_end else int(os.environ.get("FERRY_TEST_NICE", "10"))
    nice = ["nice", "-n", str(niceness)] if niceness else []
    # Output to a file, not a pipe: a process a test left running (a child it never reaped) would
    # hold a pipe open and the run would wait for it until CI's time ran out. The binary leads a
    # process group of its own, and what is left in it when the binary ends is killed.
    limit = float(os.environ.get("FERRY_TEST_TIMEOUT", "1800"))
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            [*nice, binary.executable, *args],
            cwd=binary.manifest_dir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            status = process.wait(timeout=limit)
            ending = ""
        except subprocess.TimeoutExpired:
            status = 124
            ending = f"\n[tests] {binary.name} was still running after {limit:.0f} s (FERRY_TEST_TIMEOUT): killed\n"
        left = end_group(process)
        if left:
            ending += f"[tests] {binary.name} left processes running, killed: {'; '.join(left)}\n"
        out.seek(0)
        return status, out.read().decode(errors="replace") + ending


def group_members(group: int) -> dict[int, str]:
    """The live processes (zombies aside) of process group `group`: pid -> command line."""
    members = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == group:
                command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members[int(stat.parent.name)] = command.strip()[:200]
        except (OSError, IndexError, ValueError):
            continue
    return members


def end_group(process: subprocess.Popen) -> list[str]:
    """Kills what is left of `process`'s group (the process too, if it still runs) and waits until
    it is gone (10 s at most: a kill is delivered, not done, when `kill` returns); returns the
    processes it found there besides `process`."""
    group = process.pid
    found = [f"{pid} {command}" for pid, command in group_members(group).items() if pid != group]
    deadline = time.monotonic() + 10
    while True:
        try:
            os.killpg(group, 9)
        except ProcessLookupError:
            break
        if not [pid for pid in group_members(group) if pid != group] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    process.wait()
    return found


def record(binary: TestBinary, status: int, output: str, seconds: float) -> None:
    """Adds one invocation's outcome to the binary's (a binary may run twice: beside the others,
    then its tests that must run alone)."""
    binary.seconds += seconds
    binary.status = status if binary.status in (None, 0) else binary.status
    binary.output += output
    # The table must not repeat "test result:" lines: scripts/test and test-versions count those.
    counts = [0, 0, 0]
    results = [RESULT.match(line) for line in binary.output.splitlines()]
    for result in filter(None, results):
        counts = [total + int(n) for total, n in zip(counts, result.groups())]
    ok = "ok" if binary.status == 0 else f"FAILED (exit {binary.status})"
    binary.summary = f"{ok}: {counts[0]} passed, {counts[1]} failing, {counts[2]} ignored"


def run_one(binary: TestBinary, args: list[str], e2e_threads: int) -> None:
    """The binary's tests beside the others: all but those that must run alone."""
    threads = [f"--test-threads={e2e_threads}", "--skip", ALONE] if binary.end_to_end else []
    started = time.monotonic()
    status, output = invoke(binary, [*threads, *args])
    record(binary, status, output, time.monotonic() - started)


def alone_tests(binary: TestBinary, args: list[str]) -> list[str]:
    """The binary's tests (of those `args` select) that must run alone; [] if it cannot list them
    (recorded as its failure)."""
    status, listed = invoke(binary, ["--list", "--format", "terse", *args])
    if status != 0:
        record(binary, status, listed, 0.0)
        return []
    names = [line.removesuffix(": test") for line in listed.splitlines() if line.endswith(": test")]
    return [n for n in names if n.startswith(ALONE)]


def run_alone(binary: TestBinary, names: list[str]) -> None:
    """`names`, tests of `binary` that disturb everything else on the shared control plane and
    real node (a kubelet restart, an operator watching every namespace): one at a time, after
    every other end-to-end test has ended; printed as the binary's tests that run alone."""
    printed = ""
    for name in names:
        started = time.monotonic()
        status, output = invoke(binary, ["--test-threads=1", "--exact", name])
        record(binary, status, output, time.monotonic() - started)
        printed += output
    if printed:
        with PRINTING:
            print(f"\n     Running {binary.name}, its tests that run alone ({binary.executable})", flush=True)
            print(printed, end="" if printed.endswith("\n") else "\n", flush=True)


def run_side_by_side(binaries: list[TestBinary], args: list[str], e2e_threads: int, jobs: int) -> None:
    """Runs `binaries`, `jobs` at a time, each printed whole when it ends."""
    pending = list(binaries)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                binary = pending.pop(0)
            run_one(binary, args, e2e_threads)
            with PRINTING:
                print(f"\n     Running {binary.name} ({binary.executable})", flush=True)
                print(binary.output, end="" if binary.output.endswith("\n") else "\n", flush=True)

    workers = [threading.Thread(target=worker) for _ in range(min(jobs, len(binaries)))]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()


def run(args: list[str]) -> int:
    binaries = build()
    if not binaries:
        sys.exit("[tests] the build made no test binaries")
    jobs = int(os.environ.get("FERRY_TEST_JOBS", "3"))
    # Four threads: the operator's binary (92 tests, most of their time waiting on Kubernetes: real
    # pods, paced copies, an API server outage) took 558 s on three, past the 10-minute CI; the
    # race four threads once surfaced is fixed (docs/testenv.md). Five gained nothing (620 s against
    # 612 s): the two cores are the limit.
    e2e_threads = int(os.environ.get("FERRY_E2E_THREADS", "4"))
    # The end-to-end binaries first, side by side: they and the control plane they share keep both
    # cores busy. The others (the mover's, the unit tests) need no cluster: they run once those
    # are done, beside the tests that must run alone, which mostly wait (a kubelet restart, a
    # network cut), so their CPU no longer slows the cluster's tests.
    cluster = [b for b in binaries if b.end_to_end]
    local = [b for b in binaries if not b.end_to_end]
    print(f"[tests] {len(binaries)} test binaries, {jobs} at a time, {e2e_threads} threads in each end-to-end one", flush=True)
    run_side_by_side(cluster, args, e2e_threads, jobs)
    local_run = threading.Thread(target=run_side_by_side, args=(local, args, e2e_threads, jobs))
    local_run.start()
    # Those in `alone::last` after every other (their aftermath would slow the next one).
    alone = [(binary, alone_tests(binary, args)) for binary in cluster]
    for binary, names in alone:
        run_alone(binary, [n for n in names if not n.startswith(ALONE_LAST)])
    for binary, names in alone:
        run_alone(binary, [n for n in names if n.startswith(ALONE_LAST)])
    local_run.join()
    print("\n[tests] seconds  binary  result", flush=True)
    for binary in sorted(binaries, key=lambda b: -b.seconds):
        print(f"[tests] {binary.seconds:7.1f}  {binary.name}  {binary.summary}", flush=True)
    timed = [
        (float(found.group(3)), found.group(1), found.group(2))
        for binary in binaries
        for found in map(TIMED.match, binary.output.splitlines())
        if found
    ]
    print(f"[tests] the {SLOWEST} slowest end-to-end tests (seconds)", flush=True)
    for seconds, test, outcome in sorted(timed, reverse=True)[:SLOWEST]:
        print(f"[tests] {seconds:7.1f}  {test}  {outcome}", flush=True)
    return 0 if all(b.status == 0 for b in binaries) else 1


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["build"] and len(argv) == 1:
        build()
        return
    if argv[:1] == ["run"]:
        rest = argv[1:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        sys.exit(run(rest))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
