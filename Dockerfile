# pmcached container image.
#   docker build -t pmcached .
#   docker run -p 11211:11211 -v pmcached-data:/data pmcached [extra pmcached flags]
# Extra arguments are appended to the defaults below; a repeated flag keeps its last value.
# The HEALTHCHECK talks to port 11211, so keep that port inside the container.

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
EXPOSE 11211
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/11211 && printf 'version\\r\\n' >&3 && read -r -t 3 line <&3 && [[ $line == VERSION* ]]"]
ENTRYPOINT ["pmcached", "-l", "0.0.0.0", "-p", "11211", "--pool", "/data/pmcached.pool"]
