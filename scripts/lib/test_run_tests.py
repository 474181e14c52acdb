"""Tests of run_tests.py's running of one test binary: a process a test left behind, or a binary
that never ends, fails the run with a message instead of holding it until CI's time runs out.

    python3 -B -m unittest discover -s scripts/lib -p 'test_run_tests.py'
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_tests  # noqa: E402


def binary(script: str, directory: Path) -> run_tests.TestBinary:
    """A stand-in test binary: a shell script."""
    path = directory / "fake-test"
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return run_tests.TestBinary("ferry-fake", "fake", "test", str(path), str(directory))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class InvokeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(lambda: os.system(f"rm -rf {self.dir}"))

    def test_a_process_left_holding_the_output_neither_holds_the_run_nor_outlives_it(self) -> None:
        # Its own output is the binary's: with a pipe, the run would wait for its end (300 s).
        fake = binary(f"sleep 300 & echo $! > {self.dir}/left\necho 'test result: ok. 1 passed; 0 failed; 0 ignored'", self.dir)
        started = time.monotonic()
        status, output = run_tests.invoke(fake, [])
        self.assertLess(time.monotonic() - started, 30, output)
        self.assertEqual(status, 0, output)
        self.assertIn("test result: ok. 1 passed", output)
        self.assertIn("left processes running, killed", output)
        left = int((self.dir / "left").read_text())
        # Named by its pid (its command line may still be the shell's: `&` forks before `sleep` runs).
        named = output.split("left processes running, killed: ", 1)[1]
        self.assertIn(f"{left} ", named)
        self.assertFalse(alive(left), "the process left behind still runs")

    def test_a_binary_running_past_the_limit_is_killed_and_fails(self) -> None:
        fake = binary("echo 'test slow has been running for over 60 seconds'\nsleep 300", self.dir)
        with mock.patch.dict(os.environ, {"FERRY_TEST_TIMEOUT": "2"}):
            started = time.monotonic()
            status, output = run_tests.invoke(fake, [])
        self.assertLess(time.monotonic() - started, 30, output)
        self.assertEqual(status, 124, output)
        self.assertIn("test slow has been running", output)
        self.assertIn("still running after 2 s (FERRY_TEST_TIMEOUT): killed", output)

    def test_a_binary_that_ends_cleanly_reports_nothing_more(self) -> None:
        fake = binary("echo done\nexit 3", self.dir)
        status, output = run_tests.invoke(fake, [])
        self.assertEqual((status, output), (3, "done\n"))


if __name__ == "__main__":
    unittest.main()
