"""A multi-platform OCI image index as an OCI image layout tarball (Python standard library only).

`write_index` writes what `docker buildx build --output type=oci` writes: `oci-layout`, `index.json`
naming one image index, and `blobs/sha256/...` holding that index, one manifest and one config per
platform, and the layers. `ctr images import --all-platforms`, `skopeo copy oci-archive:`,
`crane push`, `oras cp` and Docker 25+'s `docker load` read it. Layers stay uncompressed tars (the
media type says so), every JSON document is canonical and the tar has sorted entries with mtime 0,
so the same layers and configs always give the same bytes and the same index digest.

`read_index` reads one back and checks every blob against its digest (used by the CI's check).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from dataclasses import dataclass

import oci_archive as oci

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


@dataclass(frozen=True)
class PlatformImage:
    os: str
    architecture: str
    layer_path: str  # an uncompressed layer tar (oci_archive.write_layer)
    diff_id: str  # "sha256:..." of that tar
    config: dict  # oci_archive.image_config(...); rootfs.diff_ids are filled in here


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _descriptor(media_type: str, data: bytes, **extra) -> dict:
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data), **extra}


def write_index(out_path: str | os.PathLike, ref: str, images: list[PlatformImage], annotations: dict) -> str:
    """Writes the layout tarball atomically; returns the image index's digest ("sha256:...")."""
    blobs: dict[str, bytes] = {}  # digest hex -> JSON blob
    layers: dict[str, str] = {}  # digest hex -> layer tar path
    manifests = []
    for image in images:
        config = json.loads(json.dumps(image.config))
        config["rootfs"] = {"type": "layers", "diff_ids": [image.diff_id]}
        config_bytes = _canonical(config)
        layer_size = os.path.getsize(image.layer_path)
        layer = {"mediaType": LAYER, "digest": image.diff_id, "size": layer_size}
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": _descriptor(CONFIG, config_bytes),
            "layers": [layer],
        }
        manifest_bytes = _canonical(manifest)
        platform = {"architecture": image.architecture, "os": image.os}
        manifests.append(_descriptor(MANIFEST, manifest_bytes, platform=platform))
        for data in (config_bytes, manifest_bytes):
            blobs[hashlib.sha256(data).hexdigest()] = data
        layers[image.diff_id.split(":", 1)[1]] = image.layer_path
    index = {"schemaVersion": 2, "mediaType": INDEX, "manifests": manifests, "annotations": annotations}
    index_bytes = _canonical(index)
    index_digest = hashlib.sha256(index_bytes).hexdigest()
    blobs[index_digest] = index_bytes
    _, tag = oci.split_ref(ref)
    names = {"org.opencontainers.image.ref.name": tag, "io.containerd.image.name": ref}
    top = {"schemaVersion": 2, "mediaType": INDEX, "manifests": [_descriptor(INDEX, index_bytes, annotations=names)]}
    _write_tar(os.fspath(out_path), _canonical(top), blobs, layers)
    return f"sha256:{index_digest}"


def _write_tar(out_path: str, top: bytes, blobs: dict[str, bytes], layers: dict[str, str]) -> None:
    tmp = f"{out_path}.tmp{os.getpid()}"
    entries = sorted([(f"blobs/sha256/{h}", data, None) for h, data in blobs.items()] + [(f"blobs/sha256/{h}", None, p) for h, p in layers.items()])
    try:
        with open(tmp, "wb") as out, tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:

            def add_bytes(name: str, data: bytes) -> None:
                tar.addfile(oci._tarinfo(name, "file", 0o644, size=len(data)), io.BytesIO(data))

            add_bytes("oci-layout", _canonical({"imageLayoutVersion": "1.0.0"}))
            add_bytes("index.json", top)
            for name in ("blobs", "blobs/sha256"):
                tar.addfile(oci._tarinfo(name, "dir", 0o755))
            for name, data, path in entries:
                if data is not None:
                    add_bytes(name, data)
                else:
                    with open(path, "rb") as f:
                        tar.addfile(oci._tarinfo(name, "file", 0o644, size=os.fstat(f.fileno()).st_size), f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class LayoutError(Exception):
    pass


def read_index(path: str | os.PathLike) -> dict:
    """{"ref", "digest", "annotations", "platforms": {"os/arch": {"config": dict, "layer": bytes}}},
    after checking that every blob the index names is present and matches its digest."""
    with tarfile.open(path, "r:") as tar:
        files = {m.name.lstrip("./"): m for m in tar.getmembers() if m.isfile()}

        def read(name: str) -> bytes:
            member = files.get(name)
            if member is None:
                raise LayoutError(f"{path}: {name} is missing")
            with tar.extractfile(member) as f:  # type: ignore[union-attr]
                return f.read()

        def blob(descriptor: dict) -> bytes:
            algorithm, hexdigest = descriptor["digest"].split(":", 1)
            data = read(f"blobs/{algorithm}/{hexdigest}")
            if hashlib.sha256(data).hexdigest() != hexdigest or len(data) != descriptor["size"]:
                raise LayoutError(f"{path}: blob {descriptor['digest']} does not match its digest or size")
            return data

        if json.loads(read("oci-layout")).get("imageLayoutVersion") != "1.0.0":
            raise LayoutError(f"{path}: not an OCI image layout")
        top = json.loads(read("index.json"))
        if len(top.get("manifests", [])) != 1 or top["manifests"][0]["mediaType"] != INDEX:
            raise LayoutError(f"{path}: index.json must name exactly one image index")
        named = top["manifests"][0]
        index = json.loads(blob(named))
        platforms = {}
        for descriptor in index["manifests"]:
            manifest = json.loads(blob(descriptor))
            config = json.loads(blob(manifest["config"]))
            (layer,) = manifest["layers"]
            key = f"{descriptor['platform']['os']}/{descriptor['platform']['architecture']}"
            platforms[key] = {"config": config, "layer": blob(layer), "manifest": manifest}
        return {
            "ref": named.get("annotations", {}).get("io.containerd.image.name"),
            "digest": named["digest"],
            "annotations": index.get("annotations", {}),
            "platforms": platforms,
        }
