"""Checks the multi-platform image index and runs its arm64 binaries under qemu (CI, scripts/test).

    multiarch_check.py INDEX_TARBALL [--containerd SOCK]

1. The OCI layout: every blob matches its digest; exactly linux/amd64 and linux/arm64; each
   platform's config names its architecture, carries the revision and created labels, and its layer
   holds `ferry` and `ferry-mover` built for that machine (the ELF header's e_machine).
2. The arm64 binaries under qemu-aarch64-static: `ferry --version`, `ferry-mover --version`, and a
   `ferry-mover sync` of a tree with everything the mover promises to keep (owners, modes with
   special bits, times to the nanosecond, user xattrs, an ACL, hard links, symlinks, a sparse file, a
   FIFO, a device node, a file past the 32 MiB chunk size), verified with checksums, then changed
   and synced again; the host's own mover then digests source and target, which must agree.
3. With --containerd: `ctr images import --all-platforms` of the index into a scratch namespace
   (containerd checks every digest again), which must list both platforms; removed afterwards.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import oci_layout  # noqa: E402

WANTED = {"linux/amd64": 0x3E, "linux/arm64": 0xB7}  # ELF e_machine: EM_X86_64, EM_AARCH64
BINARIES = ["usr/local/bin/ferry", "usr/local/bin/ferry-mover"]
QEMU = "qemu-aarch64-static"


def fail(message: str) -> None:
    sys.exit(f"[multiarch] FAILED: {message}")


def say(message: str) -> None:
    print(f"[multiarch] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        fail(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done


def elf_machine(data: bytes) -> int:
    if data[:4] != b"\x7fELF":
        return -1
    return int.from_bytes(data[18:20], "little")


def check_layout(tarball: Path, out_dir: Path) -> Path:
    """Checks the index; extracts the arm64 binaries into out_dir and returns that directory."""
    try:
        index = oci_layout.read_index(tarball)
    except (oci_layout.LayoutError, KeyError, ValueError) as err:
        fail(str(err))
    if sorted(index["platforms"]) != sorted(WANTED):
        fail(f"platforms {sorted(index['platforms'])}, wanted {sorted(WANTED)}")
    for key, image in index["platforms"].items():
        config = image["config"]
        if f"{config['os']}/{config['architecture']}" != key:
            fail(f"{key}: its config says {config['os']}/{config['architecture']}")
        image_labels = config["config"].get("Labels", {})
        for label in ("org.opencontainers.image.revision", "org.opencontainers.image.created", "org.opencontainers.image.version"):
            if not image_labels.get(label):
                fail(f"{key}: label {label} missing")
        with tarfile.open(fileobj=io.BytesIO(image["layer"]), mode="r:") as layer:
            for name in BINARIES:
                data = layer.extractfile(name).read()  # type: ignore[union-attr]
                if elf_machine(data) != WANTED[key]:
                    fail(f"{key}: {name} is built for ELF machine {elf_machine(data):#x}, not {WANTED[key]:#x}")
                if key == "linux/arm64":
                    path = out_dir / Path(name).name
                    path.write_bytes(data)
                    path.chmod(0o755)
    say(f"index {index['digest'][:19]} ({index['ref']}): {', '.join(sorted(index['platforms']))}, every blob matches its digest")
    return out_dir


def make_tree(root: Path) -> None:
    """Everything the mover keeps, with owners and special bits only root can set."""
    rng = random.Random(7)
    (root / "d/sub").mkdir(parents=True)
    (root / "d/small").write_bytes(rng.randbytes(5000))
    (root / "d/empty").write_bytes(b"")
    big = root / "big"
    with open(big, "wb") as f:
        for _ in range(40):  # 40 MiB: past the mover's 32 MiB chunk size
            f.write(rng.randbytes(1 << 20))
    with open(root / "sparse", "wb") as f:
        f.seek(8 << 20)
        f.write(b"tail")
        f.truncate(16 << 20)
    os.link(root / "d/small", root / "hardlink")
    os.symlink("d/small", root / "symlink")
    os.symlink("nowhere", root / "dangling")
    os.mkfifo(root / "fifo")
    os.mknod(root / "null-like", 0o600 | 0o020000, os.makedev(1, 3))
    os.chmod(root / "d/sub", 0o2775)
    os.chmod(root / "d/small", 0o4751)
    os.chown(root / "d/empty", 1234, 5678)
    os.setxattr(root / "d/small", "user.ferry", b"kept")
    run(["setfacl", "-m", "u:1234:rw", str(root / "big")])
    (root / "d/\u00e9t\u00e9 name").write_text("unicode")
    os.utime(root / "big", ns=(1_600_000_000_123_456_789, 1_600_000_000_987_654_321))


def change_tree(root: Path) -> None:
    (root / "d/small").write_bytes(b"rewritten")
    (root / "d/empty").unlink()
    (root / "d/sub/new").write_text("new file")
    with open(root / "big", "r+b") as f:
        f.seek(20 << 20)
        f.write(b"changed in the middle")


def digest(mover: str, tree: Path) -> str:
    lines = run([mover, "digest", str(tree)]).stdout.splitlines()
    return "\n".join(line for line in lines if line.startswith(("digest ", "metadataDigest ")))


def check_qemu(arm64: Path, host_mover: str) -> None:
    if shutil.which(QEMU) is None:
        fail(f"{QEMU} not found (scripts/install-deps --cross)")
    for name in ("ferry", "ferry-mover"):
        version = run([QEMU, str(arm64 / name), "--version"]).stdout.strip()
        if not version.startswith(f"{name} "):
            fail(f"arm64 {name} --version printed {version!r}")
        say(f"arm64 under qemu: {version}")
    with tempfile.TemporaryDirectory(prefix="ferry-multiarch-") as work:
        source, target = Path(work) / "source", Path(work) / "target"
        source.mkdir()
        make_tree(source)
        sync = [QEMU, str(arm64 / "ferry-mover"), "sync", "--source", str(source), "--target", str(target), "--verify", "checksum", "--delete"]
        for round_name in ("first pass", "after changes"):
            if round_name == "after changes":
                change_tree(source)
            run(sync)
            want, got = digest(host_mover, source), digest(host_mover, target)
            if not want or want != got:
                fail(f"arm64 mover sync ({round_name}): target digest\n{got}\ndiffers from source\n{want}")
            say(f"arm64 mover sync ({round_name}): target matches source ({want.splitlines()[0]})")


def check_containerd(tarball: Path, socket: str) -> None:
    ctr = ["ctr", "--address", socket, "-n", "ferry-index-check"]
    run([*ctr, "images", "import", "--all-platforms", str(tarball)])
    try:
        listed = run([*ctr, "images", "ls"]).stdout
        if "linux/amd64" not in listed or "linux/arm64" not in listed:
            fail(f"containerd lists the imported index without both platforms:\n{listed}")
        say("containerd imported the index: linux/amd64 and linux/arm64")
    finally:
        for ref in run([*ctr, "images", "ls", "-q"]).stdout.split():
            subprocess.run([*ctr, "images", "rm", "--sync", ref], capture_output=True)
        subprocess.run([*ctr, "content", "prune", "references"], capture_output=True)
        subprocess.run(["ctr", "--address", socket, "namespaces", "rm", "ferry-index-check"], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path)
    parser.add_argument("--host-mover", required=True, help="this machine's ferry-mover, to digest the trees")
    parser.add_argument("--containerd", help="a containerd socket to import the index into")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-arm64-bin-") as bin_dir:
        arm64 = check_layout(args.index, Path(bin_dir))
        check_qemu(arm64, args.host_mover)
    if args.containerd:
        check_containerd(args.index, args.containerd)
    say("ok")


if __name__ == "__main__":
    main()
