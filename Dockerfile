# syntax=docker/dockerfile:1
# Dockerfile: the epochgate container image. Two stages on Debian bookworm:
# `build` compiles the epochgate binary from this tree with Debian's -dev
# packages; the runtime stage holds only the binary, the runtime libraries and
# a default config, and runs as uid 10001 on a read-only root filesystem.
# Must never: download anything but Debian packages, or write at run time.
#
#   docker build -t epochgate:0.1.0 .
#   podman build --network=host -t epochgate:0.1.0 .
# tools/image/build.sh builds it with podman (base images from mmdebstrap
# where no registry is reachable) and tests/image runs it; docs/deploy.md.

ARG DEBIAN_RELEASE=bookworm

FROM debian:${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config python3 \
      libuv1-dev libspdlog-dev libfmt-dev libyaml-cpp-dev prometheus-cpp-dev node-llhttp libssl-dev \
      libgtest-dev libgmock-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Only the proxy binary: no test peers (librdkafka), no benchmarks, no tests.
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DEPOCHGATE_PEERS=OFF -DEPOCHGATE_BENCH=OFF \
 && cmake --build /build --target epochgate -j"$(nproc)" \
 && install -D -m 0755 "$(find /build -type f -name epochgate -perm -u+x | head -n 1)" \
      /out/usr/local/bin/epochgate \
 && install -D -m 0644 tools/image/epochgate.yaml /out/etc/epochgate/epochgate.yaml

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libuv1 libspdlog1.10 libfmt9 libyaml-cpp0.7 libprometheus-cpp-core1.0 libssl3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log \
 && groupadd --system --gid 10001 epochgate \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin epochgate
COPY --from=build /out/ /
# Nothing is written at run time: config is read from /etc/epochgate (a
# ConfigMap in Kubernetes), logs go to stdout/stderr.
USER 10001:10001
# 9092: bootstrap listener; 9644: admin (/metrics, /healthz, /readyz).
# Broker listeners are broker_ports.base + node id (9100 + n in the default
# config), published per deployment.
EXPOSE 9092 9644
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/epochgate"]
CMD ["--config", "/etc/epochgate/epochgate.yaml"]
LABEL org.opencontainers.image.title="epochgate" \
      org.opencontainers.image.description="Kafka protocol proxy that enforces leader-epoch fencing"
