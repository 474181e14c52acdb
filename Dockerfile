# syntax=docker/dockerfile:1
# Ferry's image for your own builds: `docker build -t ferry:0.1.0 .` (or podman/buildah/kaniko).
# Needs BuildKit (Docker's default builder since 23.0; `DOCKER_BUILDKIT=1` before that; buildah and
# kaniko read `RUN --mount` too): the build caches cargo's registry and target dir with `--mount`.
# The same layout as the project's own image build (scripts/images, docs/images.md): two static
# binaries, /etc/passwd and /etc/group with root and ferry (65532), /tmp 1777, nothing else — no
# shell, no package manager. `ferry` is the entry point; mover pods run `ferry-mover` from the same
# image (the chart's mover.image defaults to it).

# Multi-platform: `docker buildx build --platform linux/amd64,linux/arm64 .` compiles on the build
# machine's own platform ($BUILDPLATFORM) for each target ($TARGETARCH), never under emulation: arm64
# links with rust-lld, and ring's C code builds with Debian's aarch64 cross compiler.
FROM --platform=$BUILDPLATFORM rust:1.95-bookworm AS build
ARG TARGETARCH
ARG SOURCE_DATE_EPOCH
RUN case "$TARGETARCH" in \
      amd64) echo x86_64-unknown-linux-musl > /rust-target; cross="" ;; \
      arm64) echo aarch64-unknown-linux-musl > /rust-target; cross="gcc-aarch64-linux-gnu libc6-dev-arm64-cross" ;; \
      *) echo "unsupported TARGETARCH $TARGETARCH (amd64 or arm64)" >&2; exit 1 ;; \
    esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends musl-tools $cross \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add "$(cat /rust-target)"
ENV CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
    CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc \
    AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target,id=ferry-target-${TARGETARCH} \
    target="$(cat /rust-target)" \
 && cargo build --release --locked --target "$target" \
      -p ferry-operator -p ferry-mover --bin ferry --bin ferry-mover \
 && mkdir -p /rootfs/usr/local/bin /rootfs/etc /rootfs/tmp /rootfs/root /rootfs/home/ferry \
 && cp "target/$target/release/ferry" "target/$target/release/ferry-mover" /rootfs/usr/local/bin/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nferry:x:65532:65532:ferry:/home/ferry:/sbin/nologin\n' > /rootfs/etc/passwd \
 && printf 'root:x:0:\nferry:x:65532:\n' > /rootfs/etc/group \
 && printf 'passwd: files\ngroup: files\nhosts: files dns\n' > /rootfs/etc/nsswitch.conf \
 && chmod 1777 /rootfs/tmp && chmod 700 /rootfs/root && chown 65532:65532 /rootfs/home/ferry

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="ferry" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.description="Ferry: safe StatefulSet volume changes on Kubernetes" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/ferry-dev/ferry" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ferry"]
