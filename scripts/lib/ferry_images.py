"""Ferry's local container images, built without a registry or a container engine (see docs/images.md).

    ferry_images.py build  [NAME...]                       build (or reuse) the docker-archive tarballs
    ferry_images.py import --address SOCK [-n NS] [NAME...]  build, then `ctr images import` what changed

NAME is pause, busybox, ferry, postgres, prometheus or es-standin (default: all). Each image is one layer whose entries are
fingerprinted (paths, owners, modes, content digests) together with the image config and the
archive writer; the tarball is `<name>-<tag>-<fingerprint>.tar` in $FERRY_CACHE_DIR/images, so a
cache hit is a file-exists check. Logs go to stderr; stdout is `<ref> <tarball>` per image (build)
or one line per image saying what import did.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fresh_mtimes  # noqa: E402
import oci_archive as oci  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HOME = Path(os.environ.get("HOME", "/root"))
XDG_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or HOME / ".cache")
CACHE_DIR = Path(os.environ.get("FERRY_CACHE_DIR") or XDG_CACHE / "ferry")
IMAGES_DIR = CACHE_DIR / "images"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MUSL_TARGET = "x86_64-unknown-linux-musl"
IMAGE_PROFILE = "image"  # Cargo.toml: release without cross-crate LTO, incremental
PG_MAJOR = "15"
PG = f"/usr/lib/postgresql/{PG_MAJOR}"
PG_BINARIES = ["postgres", "initdb", "pg_ctl", "psql", "pgbench", "pg_isready", "pg_controldata", "pg_checksums", "pg_amcheck"]


def log(message: str) -> None:
    print(f"[images] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kwargs)


def output(cmd: list[str], **kwargs) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


def require_static(path: str | Path, hint: str) -> None:
    described = output(["file", "-L", str(path)])
    if "statically linked" not in described and "static-pie linked" not in described:
        sys.exit(f"[images] {path} is not a static binary ({described.strip()}); {hint}")


def passwd(*users: tuple[str, int, str, str]) -> tuple[str, str]:
    """(/etc/passwd, /etc/group) for (name, id, home, shell) users, each with its own group."""
    pw = "".join(f"{n}:x:{i}:{i}:{n}:{home}:{shell}\n" for n, i, home, shell in users)
    gr = "".join(f"{n}:x:{i}:\n" for n, i, _, _ in users)
    return pw, gr


def add_etc(r: oci.Rootfs, *users: tuple[str, int, str, str]) -> None:
    pw, gr = passwd(*users)
    r.file("etc/passwd", data=pw)
    r.file("etc/group", data=gr)
    r.file("etc/nsswitch.conf", data="passwd: files\ngroup: files\nhosts: files dns\n")
    r.dir("tmp", 0o1777)


def add_busybox(r: oci.Rootfs) -> None:
    """/bin/busybox (Debian's busybox-static) and a /bin symlink per applet."""
    host = shutil.which("busybox") or "/bin/busybox"
    require_static(host, "install busybox-static (the busybox package is dynamic)")
    r.dir("bin")
    r.file("bin/busybox", src=os.path.realpath(host), mode=0o755)
    for applet in sorted(set(output([host, "--list"]).split()) - {"busybox"}):
        r.symlink(f"bin/{applet}", "busybox")


# --- the images ------------------------------------------------------------------------------------


def pause_image(work: Path) -> tuple[oci.Rootfs, dict]:
    binary = work / "pause"
    run(["musl-gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", str(binary), str(REPO / "images/pause/pause.c")])
    require_static(binary, "musl-gcc did not link it statically")
    r = oci.Rootfs()
    r.file("pause", src=binary, mode=0o755)
    return r, oci.image_config(user="65535:65535", env=[PATH_ENV], entrypoint=["/pause"])


def busybox_image(work: Path) -> tuple[oci.Rootfs, dict]:
    r = oci.Rootfs()
    add_busybox(r)
    add_etc(r, ("root", 0, "/root", "/bin/sh"), ("nobody", 65534, "/nonexistent", "/bin/false"))
    r.dir("root", 0o700)
    return r, oci.image_config(env=[PATH_ENV], cmd=["sh"])


def ensure_rust_target(target: str) -> None:
    if shutil.which("rustup"):
        installed = output(["rustup", "target", "list", "--installed"], cwd=REPO)
        if target not in installed.split():
            log(f"rustup target add {target}")
            run(["rustup", "target", "add", target], cwd=REPO, stdout=sys.stderr)


def build_ferry_binaries(target: str, profile: str = IMAGE_PROFILE, env: dict | None = None) -> Path:
    """Builds `ferry` and `ferry-mover` for a musl target; returns the directory holding both."""
    ensure_rust_target(target)
    target_dir = fresh_mtimes.target_dir()
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir), **(env or {}))
    cmd = ["cargo", "build", "--profile", profile, "--locked", "--target", target]
    cmd += ["-p", "ferry-operator", "-p", "ferry-mover", "--bin", "ferry", "--bin", "ferry-mover"]
    log(" ".join(cmd))
    # Through the content-keyed freshness of every other build (nothing to do when no input changed).
    status = fresh_mtimes.run_cargo(cmd[1:], env=env, lint=False, stdout=sys.stderr)
    if status != 0:
        sys.exit(f"[images] {' '.join(cmd)} failed (exit {status})")
    binaries = target_dir / target / profile
    for name in ["ferry", "ferry-mover"]:
        require_static(binaries / name, f"check the {target} build")
    return binaries


def ferry_rootfs(binaries: Path) -> oci.Rootfs:
    """The ferry image's one layer: the two static binaries, /etc with root and ferry, /tmp."""
    r = oci.Rootfs()
    for name in ["ferry", "ferry-mover"]:
        r.file(f"usr/local/bin/{name}", src=binaries / name, mode=0o755)
    add_etc(r, ("root", 0, "/root", "/sbin/nologin"), ("ferry", 65532, "/home/ferry", "/sbin/nologin"))
    r.dir("root", 0o700)
    r.dir("home/ferry", 0o755, 65532, 65532)
    return r


def ferry_config(labels: dict, **kwargs) -> dict:
    return oci.image_config(
        user="65532:65532",
        env=[PATH_ENV],
        entrypoint=["/usr/local/bin/ferry"],
        extra={"Labels": labels},
        **kwargs,
    )


def ferry_image(work: Path) -> tuple[oci.Rootfs, dict]:
    binaries = build_ferry_binaries(MUSL_TARGET)
    return ferry_rootfs(binaries), ferry_config(oci_labels())


def oci_labels() -> dict:
    """The OCI labels the Dockerfile sets too: version (the workspace's), source, licence."""
    manifest = (REPO / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', manifest, re.M)
    licence = re.search(r'^license = "([^"]+)"', manifest, re.M)
    return {
        "org.opencontainers.image.title": "ferry",
        "org.opencontainers.image.description": "Ferry: safe StatefulSet volume changes on Kubernetes",
        "org.opencontainers.image.version": version.group(1) if version else "unknown",
        "org.opencontainers.image.source": "https://github.com/ferry-dev/ferry",
        "org.opencontainers.image.licenses": licence.group(1) if licence else "unknown",
    }


def postgres_image(work: Path) -> tuple[oci.Rootfs, dict]:
    if not os.path.exists(f"{PG}/bin/postgres"):
        sys.exit(f"[images] {PG}/bin/postgres is missing: apt-get install postgresql-{PG_MAJOR}")
    r = oci.Rootfs()
    add_busybox(r)  # first, so /bin is a directory of applets, not the host's bin -> usr/bin link
    elf_files = []
    for name in PG_BINARIES:
        if os.path.exists(f"{PG}/bin/{name}"):
            elf_files.append(r.host_path(f"{PG}/bin/{name}"))

    # Extensions and encoding conversions are loaded at run time; the JIT provider (llvmjit, which
    # would bring the 100 MB libLLVM) and its bitcode are left out: postgres then runs without JIT.
    def skip_lib(rel: str) -> bool:
        return rel.split("/")[0] in {"bitcode", "pgxs"} or rel.startswith("llvmjit")

    r.host_tree(f"{PG}/lib", skip=skip_lib)
    elf_files += [f"{PG}/lib/{n}" for n in sorted(os.listdir(f"{PG}/lib")) if n.endswith(".so") and not skip_lib(n)]
    for path in sorted({lib for elf in elf_files for lib in oci.ldd_paths(elf)}):
        r.host_path(path)
    r.host_tree(f"/usr/share/postgresql/{PG_MAJOR}", skip=lambda rel: rel.split("/")[0] == "man")
    # time zone names (no right/ leap-second variants; localtime points at the host's /etc)
    r.host_tree("/usr/share/zoneinfo", skip=lambda rel: rel.split("/")[0] in {"right", "localtime"})
    if os.path.isdir("/usr/lib/locale/C.utf8"):
        r.host_tree("/usr/lib/locale/C.utf8")  # so LANG=C.UTF-8 works for psql and friends
    add_etc(r, ("root", 0, "/root", "/bin/sh"), ("postgres", 999, "/var/lib/postgresql", "/bin/sh"))
    r.dir("root", 0o700)
    r.file("usr/local/bin/docker-entrypoint.sh", src=REPO / "images/postgres/docker-entrypoint.sh", mode=0o755)
    r.dir("var/run")  # a directory, not a link to /run (ctr run mounts a root-owned tmpfs on /run)
    r.dir("var/run/postgresql", 0o2775, 999, 999)
    r.dir("var/lib/postgresql", 0o755, 999, 999)
    r.dir("var/lib/postgresql/data", 0o700, 999, 999)
    env = [
        f"PATH={PG}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PGDATA=/var/lib/postgresql/data/pgdata",
        "LANG=C.UTF-8",
        f"PG_MAJOR={PG_MAJOR}",
    ]
    config = oci.image_config(
        user="999:999",
        env=env,
        entrypoint=["/usr/local/bin/docker-entrypoint.sh"],
        cmd=["postgres"],
        extra={"ExposedPorts": {"5432/tcp": {}}, "StopSignal": "SIGINT"},
    )
    return r, config


def test_bed_bin() -> Path:
    """The test bed's Go binaries (scripts/k8s/build.sh: builds what is missing, prints the dir)."""
    built = subprocess.run([str(REPO / "scripts/k8s/build.sh")], check=True, stdout=subprocess.PIPE, text=True)
    return Path(built.stdout.strip())


# Upstream's prometheus image (busybox base), with the config reloader the operator runs from the
# image named by its --prometheus-config-reloader: one image serves both, as both are ours.
PROMETHEUS_YML = """# As upstream's image: Prometheus scraping itself (the operator runs it with a configuration of its own).
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: ["localhost:9090"]
"""


def prometheus_image(work: Path) -> tuple[oci.Rootfs, dict]:
    bin_dir = test_bed_bin()
    r = oci.Rootfs()
    add_busybox(r)  # the operator's probes run `sh -c wget ...` when Prometheus listens on localhost only
    # /bin/prometheus: what upstream's image runs; /bin/prometheus-config-reloader: the command the
    # operator gives its reloader containers.
    for name in ["prometheus", "prometheus-config-reloader"]:
        require_static(bin_dir / name, "scripts/k8s/build.sh builds it with CGO_ENABLED=0")
        r.file(f"bin/{name}", src=bin_dir / name, mode=0o755)
    add_etc(r, ("root", 0, "/root", "/bin/sh"), ("nobody", 65534, "/home", "/bin/false"))
    r.dir("root", 0o700)
    r.dir("etc/prometheus", 0o755, 65534, 65534)
    r.file("etc/prometheus/prometheus.yml", data=PROMETHEUS_YML, uid=65534, gid=65534)
    r.dir("prometheus", 0o755, 65534, 65534)
    config = oci.image_config(
        user="65534:65534",  # numeric, so a kubelet can tell runAsNonRoot holds
        env=[PATH_ENV],
        entrypoint=["/bin/prometheus"],
        cmd=["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
        workdir="/prometheus",
        extra={"ExposedPorts": {"9090/tcp": {}}},
    )
    return r, config


# A stand-in for Elasticsearch under ECK's operator (tests of StatefulSets another operator owns):
# not Elasticsearch, but what ECK's pods run before and around it. Its init containers run ECK's
# scripts (prepare-fs.sh, suspend.sh) with bash from this image, as uid 1000 (ECK sets no user: the
# image's, numeric so runAsNonRoot can be checked); prepare-fs.sh refuses a distribution whose
# LICENSE.txt is not Elastic's. The main container only sleeps (tests give it a command that writes
# to its data first): nothing answers ECK's HTTP client, so ECK acts only on its resources.
ES_HOME = "usr/share/elasticsearch"


def es_standin_image(work: Path) -> tuple[oci.Rootfs, dict]:
    r = oci.Rootfs()
    add_busybox(r)  # first, so /bin is a directory of applets
    bash = shutil.which("bash") or "/bin/bash"
    r.file("bin/bash", src=os.path.realpath(bash), mode=0o755)
    for path in sorted(oci.ldd_paths(os.path.realpath(bash))):
        r.host_path(path)
    r.dir("usr")
    r.dir("usr/bin")
    r.symlink("usr/bin/env", "/bin/busybox")  # the scripts start `#!/usr/bin/env bash`
    add_etc(r, ("root", 0, "/root", "/bin/sh"), ("elasticsearch", 1000, f"/{ES_HOME}", "/bin/sh"))
    r.dir("root", 0o700)
    r.dir("usr/share")
    r.dir(ES_HOME, 0o755, 1000, 0)
    r.file(f"{ES_HOME}/LICENSE.txt", data="Elastic License 2.0\n(a stand-in for tests: no Elasticsearch here)\n")
    for sub in ["config", "plugins", "bin", "data", "logs"]:
        r.dir(f"{ES_HOME}/{sub}", 0o775, 1000, 0)
    config = oci.image_config(
        user="1000:0",
        env=[PATH_ENV],
        entrypoint=["/bin/sh", "-c", "exec sleep 2147483647"],
        workdir=f"/{ES_HOME}",
    )
    return r, config


@dataclass
class Image:
    name: str
    ref: str
    prepare: Callable[[Path], tuple[oci.Rootfs, dict]]


IMAGES = [
    Image("pause", "ferry.local/pause:dev", pause_image),
    Image("busybox", "ferry.local/busybox:dev", busybox_image),
    Image("ferry", "ferry.local/ferry:dev", ferry_image),
    Image("postgres", "ferry.local/postgres:dev", postgres_image),
    Image("prometheus", "ferry.local/prometheus:dev", prometheus_image),
    Image("es-standin", "ferry.local/es-standin:dev", es_standin_image),
]


def fingerprint(image: Image, rootfs: oci.Rootfs, config: dict) -> str:
    writer = oci.sha256_file(Path(oci.__file__))
    inputs = {"format": oci.FORMAT, "writer": writer, "ref": image.ref, "config": config, "layer": rootfs.fingerprint()}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def build_one(image: Image, work: Path) -> Path:
    started = time.monotonic()
    rootfs, config = image.prepare(work)
    key = fingerprint(image, rootfs, config)
    _, tag = oci.split_ref(image.ref)
    prefix = f"{image.name}-{tag}-"
    tarball = IMAGES_DIR / f"{prefix}{key[:32]}.tar"
    if tarball.exists():
        log(f"{image.ref}: up to date ({tarball.name}, {time.monotonic() - started:.1f}s)")
        return tarball
    layer = work / f"{image.name}.layer.tar"
    diff_id, size = oci.write_layer(rootfs, layer)
    config_digest = oci.write_docker_archive(tarball, image.ref, [(str(layer), diff_id)], config)
    layer.unlink()
    for old in IMAGES_DIR.glob(f"{prefix}*.tar"):
        if old != tarball and len(old.name) == len(tarball.name):
            old.unlink()  # an older build of the same image
    log(
        f"{image.ref}: built {tarball.name}: {len(rootfs.entries)} entries, layer {size / 1e6:.1f} MB, "
        f"config {config_digest[:19]}, {time.monotonic() - started:.1f}s"
    )
    return tarball


def select(names: list[str]) -> list[Image]:
    known = {i.name: i for i in IMAGES}
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"[images] unknown image(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [i for i in IMAGES if not names or i.name in names]


def build(images: list[Image]) -> list[tuple[Image, Path]]:
    IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".work-", dir=IMAGES_DIR) as work:
        return [(image, build_one(image, Path(work))) for image in images]


class Ctr:
    def __init__(self, address: str, namespace: str) -> None:
        self.base = ["ctr", "--address", address, "-n", namespace]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=check)

    def config_digest(self, ref: str) -> str | None:
        """The config digest of the image `ref` in containerd, or None when it has none."""
        listed = self("images", "ls", f"name=={ref}", check=False)
        rows = [line.split() for line in listed.stdout.splitlines()[1:]]
        digests = [row[2] for row in rows if len(row) > 2 and row[0] == ref]
        if listed.returncode != 0 or not digests:
            return None
        digest = digests[0]
        for _ in range(3):  # an index points at manifests; a manifest at its config
            got = self("content", "get", digest, check=False)
            if got.returncode != 0:
                return None
            doc = json.loads(got.stdout)
            if "config" in doc:
                return doc["config"]["digest"]
            manifests = [
                m for m in doc.get("manifests", []) if m.get("platform", {}).get("architecture", "amd64") == "amd64"
            ]
            if not manifests:
                return None
            digest = manifests[0]["digest"]
        return None


def import_images(images: list[Image], address: str, namespace: str) -> None:
    if not shutil.which("ctr"):
        sys.exit("[images] ctr not found (apt-get install containerd)")
    if not stat.S_ISSOCK(os.stat(address).st_mode if os.path.exists(address) else 0):
        sys.exit(f"[images] {address} is not a socket: is containerd running?")
    ctr = Ctr(address, namespace)
    version = ctr("version", check=False)
    if version.returncode != 0:
        sys.exit(f"[images] cannot reach containerd at {address}: {version.stderr.strip()}")
    for image, tarball in build(images):
        want = oci.read_docker_archive(tarball)["ConfigDigest"]
        if ctr.config_digest(image.ref) == want:
            print(f"present {image.ref} {want}")
            continue
        started = time.monotonic()
        imported = ctr("images", "import", "--all-platforms", str(tarball), check=False)
        if imported.returncode != 0:
            sys.exit(f"[images] ctr images import {tarball} failed: {imported.stderr.strip()}")
        got = ctr.config_digest(image.ref)
        if got != want:
            sys.exit(f"[images] after importing {tarball}, {image.ref} has config {got}, expected {want}")
        log(f"{image.ref}: imported in {time.monotonic() - started:.1f}s")
        print(f"imported {image.ref} {want} {tarball}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/images", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    build_parser = sub.add_parser("build", help="build the docker-archive tarballs (cached by content)")
    build_parser.add_argument("names", nargs="*", metavar="NAME")
    import_parser = sub.add_parser("import", help="build, then import into containerd what it lacks")
    import_parser.add_argument("--address", required=True, help="containerd socket")
    import_parser.add_argument("-n", "--namespace", default="k8s.io", help="containerd namespace (default k8s.io)")
    import_parser.add_argument("names", nargs="*", metavar="NAME")
    args = parser.parse_args()
    images = select(args.names)
    try:
        if args.command == "build":
            for image, tarball in build(images):
                print(image.ref, tarball, flush=True)
        else:
            import_images(images, args.address, args.namespace)
    except subprocess.CalledProcessError as err:
        sys.exit(f"[images] failed: {' '.join(map(str, err.cmd))} (exit {err.returncode})")


if __name__ == "__main__":
    main()
