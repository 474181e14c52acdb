"""Ferry's image for linux/amd64 and linux/arm64 as one OCI image index (see docs/images.md).

    ferry_index.py [--profile image|release] [--cross-profile PROFILE] [--out PATH]

Builds `ferry` and `ferry-mover` for each platform's musl target (arm64 is cross-built: the linker is
rust-lld, the C compiler ring needs is Debian's aarch64-linux-gnu-gcc), lays out the same single
layer the local image has, and writes an OCI image layout tarball with one image index naming both
platforms (scripts/lib/oci_layout.py). Reproducible: layers are sorted with mtime 0, `created` is
$SOURCE_DATE_EPOCH (default: the commit time of HEAD) and the revision label is HEAD's commit, so the
same commit and toolchain give the same index digest. Cached in $FERRY_CACHE_DIR/images by content.
stdout: `<ref> <tarball> <index digest>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ferry_images as images  # noqa: E402
import oci_archive as oci  # noqa: E402
import oci_layout  # noqa: E402

REF = "ghcr.io/ferry-dev/ferry"


@dataclass(frozen=True)
class Platform:
    architecture: str
    rust_target: str
    env: dict = field(default_factory=dict)


PLATFORMS = [
    Platform("amd64", "x86_64-unknown-linux-musl"),
    Platform(
        "arm64",
        "aarch64-unknown-linux-musl",
        {
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER": "rust-lld",
            "CC_aarch64_unknown_linux_musl": "aarch64-linux-gnu-gcc",
            "AR_aarch64_unknown_linux_musl": "aarch64-linux-gnu-ar",
        },
    ),
]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=images.REPO, check=True, capture_output=True, text=True).stdout.strip()


def source_date_epoch() -> int:
    given = os.environ.get("SOURCE_DATE_EPOCH")
    return int(given) if given else int(git("log", "-1", "--format=%ct"))


def revision() -> str:
    """HEAD's commit, marked `-dirty` when the checkout has uncommitted changes (honest, not reproducible)."""
    commit = git("rev-parse", "HEAD")
    return f"{commit}-dirty" if git("status", "--porcelain", "--untracked-files=no") else commit


def labels(created: str) -> dict:
    return {**images.oci_labels(), "org.opencontainers.image.revision": revision(), "org.opencontainers.image.created": created}


def build(profile: str, cross_profile: str, out: Path | None) -> tuple[Path, str]:
    started = time.monotonic()
    created = datetime.fromtimestamp(source_date_epoch(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    image_labels = labels(created)
    version = image_labels["org.opencontainers.image.version"]
    ref = f"{REF}:{version}"
    prepared = []
    for platform in PLATFORMS:
        # The host's platform reuses the local image's build; the others may take a cheaper profile.
        chosen = profile if platform.rust_target == images.MUSL_TARGET else cross_profile
        binaries = images.build_ferry_binaries(platform.rust_target, chosen, platform.env)
        config = images.ferry_config(image_labels, architecture=platform.architecture, created=created)
        prepared.append((platform, images.ferry_rootfs(binaries), config))
    inputs = {
        "writer": [oci.sha256_file(Path(m.__file__)) for m in (oci, oci_layout)],
        "ref": ref,
        "images": [[p.architecture, c, r.fingerprint()] for p, r, c in prepared],
        "profiles": [profile, cross_profile],
    }
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]
    images.IMAGES_DIR.mkdir(parents=True, exist_ok=True)
    tarball = out or images.IMAGES_DIR / f"ferry-{version}-index-{key}.tar"
    if out is None and tarball.exists():
        digest = oci_layout.read_index(tarball)["digest"]
        images.log(f"{ref}: index up to date ({tarball.name}, {time.monotonic() - started:.1f}s)")
        return tarball, f"{ref} {tarball} {digest}"
    with tempfile.TemporaryDirectory(prefix=".work-", dir=images.IMAGES_DIR) as work:
        platform_images = []
        for platform, rootfs, config in prepared:
            layer = Path(work) / f"{platform.architecture}.layer.tar"
            diff_id, _ = oci.write_layer(rootfs, layer)
            platform_images.append(oci_layout.PlatformImage("linux", platform.architecture, str(layer), diff_id, config))
        annotations = {k: v for k, v in image_labels.items() if k != "org.opencontainers.image.description"}
        digest = oci_layout.write_index(tarball, ref, platform_images, annotations)
    for old in images.IMAGES_DIR.glob(f"ferry-{version}-index-*.tar") if out is None else []:
        if old != tarball:
            old.unlink()  # an older build in the cache (never when writing elsewhere)
    images.log(f"{ref}: index {digest[:19]} for {', '.join('linux/' + p.architecture for p in PLATFORMS)} in {tarball} ({time.monotonic() - started:.1f}s)")
    return tarball, f"{ref} {tarball} {digest}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/images index", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    profiles = [images.IMAGE_PROFILE, "release"]
    parser.add_argument("--profile", default=images.IMAGE_PROFILE, choices=profiles, help="cargo profile (default image, as the tests; release for shipping)")
    parser.add_argument("--cross-profile", choices=profiles, help="cargo profile of the cross-built (arm64) binaries (default: --profile)")
    parser.add_argument("--out", type=Path, help="write the tarball here instead of the cache")
    args = parser.parse_args()
    try:
        _, line = build(args.profile, args.cross_profile or args.profile, args.out)
    except subprocess.CalledProcessError as err:
        sys.exit(f"[images] failed: {' '.join(map(str, err.cmd))} (exit {err.returncode})")
    print(line, flush=True)


if __name__ == "__main__":
    main()
