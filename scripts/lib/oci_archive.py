"""Deterministic container image layers and docker-archive tarballs (Python standard library only).

A `Rootfs` is the set of entries of one layer (directories, files, symlinks) with the owner and mode
they get in the image. `write_layer` writes it as an uncompressed tar with entries sorted by path,
mtime 0, numeric uid/gid only (no user or group names) and nothing taken from the host but file
contents and modes, so the same entries always give the same bytes, hence the same layer digest.
`write_docker_archive` writes what `docker save` writes (manifest.json with Config/RepoTags/Layers,
the config JSON, one `<diff id>/layer.tar` per layer, `repositories`), the format that `docker load`,
`ctr images import`, `podman load` and `kind load image-archive` accept.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

# Bump when the bytes written for the same entries and config change, so cached archives are rebuilt.
FORMAT = "ferry-docker-archive/1"
EPOCH = "1970-01-01T00:00:00Z"
_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Entry:
    path: str  # inside the image, relative ("usr/bin/x")
    kind: str  # "dir" | "file" | "symlink"
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    data: bytes | None = None  # file content given inline ...
    src: str | None = None  # ... or copied from this host file
    target: str | None = None  # symlink target


def _norm(path: str) -> str:
    norm = posixpath.normpath("/" + str(path)).lstrip("/")
    if not norm or norm == "." or norm.startswith(".."):
        raise ValueError(f"bad image path: {path!r}")
    return norm


class Rootfs:
    """The entries of one layer. Parent directories are added as root:root 0755 when missing."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self._digests: dict[str, str] = {}

    def _put(self, entry: Entry) -> None:
        parent = posixpath.dirname(entry.path)
        if parent:
            have = self.entries.get(parent)
            if have is None:
                self.dir(parent)
            elif have.kind != "dir":
                raise ValueError(f"/{entry.path}: parent /{parent} is a {have.kind}, not a directory")
        have = self.entries.get(entry.path)
        if have is not None and have != entry:
            if have.kind == entry.kind == "dir":
                pass  # a later explicit dir() sets the owner and mode of an implied directory
            elif have.kind == entry.kind == "file" and self._content(have) == self._content(entry) and (
                have.mode,
                have.uid,
                have.gid,
            ) == (entry.mode, entry.uid, entry.gid):
                return
            else:
                raise ValueError(f"/{entry.path} added twice: {have} vs {entry}")
        self.entries[entry.path] = entry

    def dir(self, path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        self._put(Entry(_norm(path), "dir", mode, uid, gid))

    def file(
        self,
        path: str,
        *,
        data: bytes | str | None = None,
        src: str | os.PathLike | None = None,
        mode: int = 0o644,
        uid: int = 0,
        gid: int = 0,
    ) -> None:
        if (data is None) == (src is None):
            raise ValueError("give exactly one of data= and src=")
        if isinstance(data, str):
            data = data.encode()
        if src is not None:
            src = os.fspath(src)
            if not stat.S_ISREG(os.stat(src).st_mode):
                raise ValueError(f"{src} is not a regular file")
        self._put(Entry(_norm(path), "file", mode, uid, gid, data=data, src=src))

    def symlink(self, path: str, target: str, uid: int = 0, gid: int = 0) -> None:
        self._put(Entry(_norm(path), "symlink", 0o777, uid, gid, target=target))

    def host_path(self, host: str) -> str:
        """Copies one host file to the same path, recreating every symlink met on the way (so
        /lib64/ld-linux-x86-64.so.2 brings the lib64 -> usr/lib64 link, the loader's own link and
        the file it points to). Returns the real host path."""
        host = posixpath.normpath(host)
        parts = host.strip("/").split("/")
        current = ""
        for i, part in enumerate(parts):
            current = f"{current}/{part}"
            st = os.lstat(current)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(current)
                self.symlink(current, target)
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(current), target))
                return self.host_path(posixpath.join(resolved, *parts[i + 1 :]))
            if i < len(parts) - 1:
                if not stat.S_ISDIR(st.st_mode):
                    raise ValueError(f"{current} is not a directory")
                if current.lstrip("/") not in self.entries:
                    self.dir(current)
        st = os.stat(current)
        if stat.S_ISDIR(st.st_mode):
            self.dir(current, stat.S_IMODE(st.st_mode))
        else:
            self.file(current, src=current, mode=stat.S_IMODE(st.st_mode))
        return current

    def host_tree(self, root: str, skip=lambda rel: False) -> None:
        """Copies a host directory tree as it is (symlinks stay symlinks); `skip(relative path)`
        leaves out an entry and everything below it."""
        real_root = self.host_path(root)
        for dirpath, dirnames, filenames in os.walk(real_root):
            rel_dir = posixpath.relpath(dirpath, real_root)
            for name in sorted(dirnames + filenames):
                host = posixpath.join(dirpath, name)
                rel = posixpath.normpath(posixpath.join(rel_dir, name))
                if skip(rel):
                    if name in dirnames:
                        dirnames.remove(name)
                    continue
                st = os.lstat(host)
                image_path = posixpath.join(root, rel)
                if stat.S_ISLNK(st.st_mode):
                    self.symlink(image_path, os.readlink(host))
                    if name in dirnames:
                        dirnames.remove(name)  # os.walk does not follow it anyway
                elif stat.S_ISDIR(st.st_mode):
                    self.dir(image_path, stat.S_IMODE(st.st_mode))
                elif stat.S_ISREG(st.st_mode):
                    self.file(image_path, src=host, mode=stat.S_IMODE(st.st_mode))

    def _content(self, entry: Entry) -> str:
        if entry.data is not None:
            return hashlib.sha256(entry.data).hexdigest()
        assert entry.src is not None
        if entry.src not in self._digests:
            self._digests[entry.src] = sha256_file(entry.src)
        return self._digests[entry.src]

    def fingerprint(self) -> list[list]:
        """What the layer's bytes depend on: every entry with its content digest, sorted."""
        rows = []
        for path in sorted(self.entries):
            e = self.entries[path]
            what = self._content(e) if e.kind == "file" else e.target or ""
            rows.append([path, e.kind, oct(e.mode), e.uid, e.gid, what])
        return rows

    def size(self) -> int:
        total = 0
        for e in self.entries.values():
            if e.kind == "file":
                total += len(e.data) if e.data is not None else os.stat(e.src).st_size
        return total


class _HashingWriter(io.RawIOBase):
    def __init__(self, out) -> None:
        self.out, self.digest, self.size = out, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.out.write(b)
        self.digest.update(b)
        self.size += len(b)
        return len(b)


def _tarinfo(name: str, kind: str, mode: int, uid: int = 0, gid: int = 0, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = {"dir": tarfile.DIRTYPE, "file": tarfile.REGTYPE, "symlink": tarfile.SYMTYPE}[kind]
    info.mode, info.uid, info.gid, info.size = mode, uid, gid, size
    info.mtime, info.uname, info.gname = 0, "", ""
    return info


def write_layer(rootfs: Rootfs, out_path: str | os.PathLike) -> tuple[str, int]:
    """Writes the layer tar; returns its diff id ("sha256:...") and size."""
    with open(out_path, "wb") as out:
        writer = _HashingWriter(out)
        with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(rootfs.entries):
                e = rootfs.entries[path]
                if e.kind == "file" and e.data is not None:
                    tar.addfile(_tarinfo(path, "file", e.mode, e.uid, e.gid, len(e.data)), io.BytesIO(e.data))
                elif e.kind == "file":
                    with open(e.src, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        tar.addfile(_tarinfo(path, "file", e.mode, e.uid, e.gid, size), f)
                else:
                    info = _tarinfo(path, e.kind, e.mode, e.uid, e.gid)
                    if e.kind == "symlink":
                        info.linkname = e.target
                    tar.addfile(info)
    return f"sha256:{writer.digest.hexdigest()}", writer.size


def split_ref(ref: str) -> tuple[str, str]:
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1 :]
    return ref, "latest"


def image_config(
    *,
    user: str | None = None,
    env: list[str] | None = None,
    entrypoint: list[str] | None = None,
    cmd: list[str] | None = None,
    workdir: str = "/",
    extra: dict | None = None,
    created_by: str = "scripts/images",
    architecture: str = "amd64",
    created: str = EPOCH,
) -> dict:
    """An image config for linux/ARCHITECTURE (rootfs.diff_ids are filled in by the writer)."""
    config: dict = {"WorkingDir": workdir}
    if user is not None:
        config["User"] = user
    if env:
        config["Env"] = env
    if entrypoint is not None:
        config["Entrypoint"] = entrypoint
    if cmd is not None:
        config["Cmd"] = cmd
    config.update(extra or {})
    return {
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": []},
        "history": [{"created": created, "created_by": created_by}],
    }


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def write_docker_archive(out_path: str | os.PathLike, ref: str, layers: list[tuple[str, str]], config: dict) -> str:
    """Writes a docker-archive tarball (atomically) from layer tars [(path, diff id)]; returns the
    config digest, which is also the image ID `docker load` reports."""
    config = json.loads(json.dumps(config))
    config["rootfs"] = {"type": "layers", "diff_ids": [diff_id for _, diff_id in layers]}
    config_bytes = _canonical(config)
    config_hex = hashlib.sha256(config_bytes).hexdigest()
    layer_names = [f"{diff_id.split(':', 1)[1]}/layer.tar" for _, diff_id in layers]
    manifest = [{"Config": f"{config_hex}.json", "RepoTags": [ref], "Layers": layer_names}]
    repo, tag = split_ref(ref)
    repositories = {repo: {tag: layers[-1][1].split(":", 1)[1]}} if layers else {}
    out_path = os.fspath(out_path)
    tmp = f"{out_path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as out, tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:

            def add_bytes(name: str, data: bytes) -> None:
                tar.addfile(_tarinfo(name, "file", 0o644, size=len(data)), io.BytesIO(data))

            # manifest.json first, so reading it back (import) does not scan the layers
            add_bytes("manifest.json", _canonical(manifest))
            add_bytes(f"{config_hex}.json", config_bytes)
            add_bytes("repositories", _canonical(repositories))
            for (layer_path, _), name in zip(layers, layer_names):
                tar.addfile(_tarinfo(posixpath.dirname(name), "dir", 0o755))
                with open(layer_path, "rb") as f:
                    tar.addfile(_tarinfo(name, "file", 0o644, size=os.fstat(f.fileno()).st_size), f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return f"sha256:{config_hex}"


def read_docker_archive(path: str | os.PathLike) -> dict:
    """The first manifest.json entry of a docker-archive, plus its "ConfigDigest"."""
    with tarfile.open(path, "r:") as tar:
        for member in tar:
            if member.name.lstrip("./") == "manifest.json":
                f = tar.extractfile(member)
                assert f is not None
                entry = json.load(f)[0]
                with tar.extractfile(tar.getmember(entry["Config"])) as cfg:  # type: ignore[union-attr]
                    entry["ConfigDigest"] = "sha256:" + hashlib.sha256(cfg.read()).hexdigest()
                return entry
    raise ValueError(f"{path}: no manifest.json")


def ldd_paths(binary: str) -> list[str]:
    """The shared libraries (and the dynamic loader) a dynamically linked ELF file needs, per ldd."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if out.returncode != 0:
        if "not a dynamic executable" in out.stdout + out.stderr:
            return []
        raise RuntimeError(f"ldd {binary}: {out.stderr.strip()}")
    paths = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            raise RuntimeError(f"ldd {binary}: {line}")
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" ")[0]
            if target.startswith("/"):
                paths.append(target)
        elif line.startswith("/"):
            paths.append(line.split(" ")[0])
    return paths
