# syntax=docker/dockerfile:1
# listd in a container: a release build with the Swift runtime linked in, on a
# slim Debian with only libsqlite3 and libpq (for --store postgres://…).
#
#   docker build -t listd .
#   docker run -p 8080:8080 -v listd-data:/data \
#       -e LISTD_WRITE_TOKEN=… -e LISTD_READ_TOKEN=… listd
#
# The server binds 0.0.0.0 inside the container, so it refuses to start without
# a token: pass LISTD_WRITE_TOKEN (and optionally LISTD_READ_TOKEN), or
# LISTD_ALLOW_UNAUTHENTICATED=true if something in front of it authenticates.

# ---- build ----
FROM swift:6.3-bookworm AS build
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends libsqlite3-dev libpq-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# Resolve dependencies first so this layer is cached across source changes.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
COPY Benchmarks ./Benchmarks
COPY Examples ./Examples
COPY Migrations ./Migrations
RUN swift build -c release --static-swift-stdlib --product listd \
    && mkdir -p /staging/bin /staging/share/listd \
    && cp "$(swift build -c release --static-swift-stdlib --show-bin-path)/listd" /staging/bin/ \
    && cp -R Migrations /staging/share/listd/Migrations

# ---- runtime ----
FROM debian:bookworm-slim
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get -q update \
    && apt-get -q install -y --no-install-recommends libsqlite3-0 libpq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin listd \
    && mkdir -p /data && chown listd:listd /data
COPY --from=build /staging/bin/listd /usr/local/bin/listd
COPY --from=build /staging/share/listd /usr/local/share/listd
USER listd
VOLUME /data
EXPOSE 8080
ENV LISTD_PORT=8080
# listd answers its own health check, so the image needs no curl; it probes
# http://127.0.0.1:$LISTD_PORT/healthz, so changing LISTD_PORT keeps it right.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/listd", "health"]
ENTRYPOINT ["/usr/local/bin/listd", "serve", "--host", "0.0.0.0", "--db", "/data/listd.sqlite"]
