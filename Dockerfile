# pmcached container image.
#   docker build -t pmcached .
#   docker run -p 11211:11211 -v pmcached-data:/data pmcached [extra pmcached flags]
# Extra arguments are appended to the defaults below; a repeated flag keeps its last value.
# The port inside the container is PMCACHED_PORT (default 11211), read by both the server and the
# HEALTHCHECK: change it with `-e PMCACHED_PORT=11311`, not with a -p argument to pmcached (the
# health check would still knock on the old port).
# The server runs as user pmcached (`docker run --rm --entrypoint id pmcached` shows its uid): a
# bind-mounted /data must be writable by that uid; if it is not, pmcached says which uid it is.

# ---- build stage: the build-only part of scripts/install-deps.sh, Release, tests off ----
FROM debian:bookworm AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libboost-dev libspdlog-dev libxxhash-dev libpmem-dev libcli11-dev libabsl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN scripts/build.sh --type Release --no-tests --dir /src/build --target pmcached

# ---- runtime stage: only the shared libraries pmcached links against ----
FROM debian:bookworm-slim
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libspdlog1.10 libfmt9 libpmem1 libxxhash0 libabsl20220623 \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system pmcached \
 && useradd --system --gid pmcached --home-dir /data --shell /usr/sbin/nologin pmcached \
 && mkdir -p /data \
 && chown pmcached:pmcached /data
COPY --from=build /src/build/server/pmcached /usr/local/bin/pmcached
# Fails the image build if a runtime library is missing.
RUN pmcached --version
USER pmcached
WORKDIR /data
VOLUME /data
ENV PMCACHED_PORT=11211
EXPOSE ${PMCACHED_PORT}
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PMCACHED_PORT} && printf 'version\\r\\n' >&3 && read -r -t 3 line <&3 && [[ $line == VERSION* ]]"]
# A shell only to read PMCACHED_PORT; exec leaves pmcached as PID 1 (it gets SIGTERM), and "$@"
# passes the extra arguments on.
ENTRYPOINT ["/bin/sh", "-c", "exec pmcached -l 0.0.0.0 -p \"$PMCACHED_PORT\" --pool /data/pmcached.pool \"$@\"", "pmcached"]
