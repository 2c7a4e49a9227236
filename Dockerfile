# fifoq container image: a static binary on an empty base, run as a
# non-root user, with its data in a volume.
#
#   docker build -t fifoq --build-arg VERSION=$(git describe --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) .
#   docker run -p 9324:9324 -v fifoq-data:/data \
#     -e FIFOQ_ACCESS_KEY_ID=... -e FIFOQ_SECRET_ACCESS_KEY=... fifoq
#
# In the container fifoq listens on 0.0.0.0:9324, so it requires
# credentials (or an explicit --insecure), as it does anywhere beyond
# loopback. Configuration comes from the environment or mounted files:
#   - every setting has a FIFOQ_ variable (FIFOQ_REGION, FIFOQ_LOG_JSON, ...);
#   - a config file of settings and queues, mounted and named by
#     FIFOQ_CONFIG: -v ./fifoq.yaml:/etc/fifoq/fifoq.yaml:ro
#     -e FIFOQ_CONFIG=/etc/fifoq/fifoq.yaml;
#   - access keys from FIFOQ_ACCESS_KEY_ID and FIFOQ_SECRET_ACCESS_KEY, or
#     from a mounted credentials file (a Docker secret) named by
#     FIFOQ_CREDENTIALS.
# The command line below sets --listen and --data-dir, which win over the
# same settings in the environment or the config file.
# examples/compose/docker-compose.yml puts it together.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
# CGO off for a static binary that runs on an empty base image. The build
# context has no .git, so the commit comes in as a build argument.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/fifoq ./cmd/fifoq \
 && mkdir -p /out/data

# The same image, byte for byte reproducible and for linux/amd64 and
# linux/arm64 at once, is built without Docker by the release command
# (go -C tools run ./release, docs/releasing.md), which reads this stage's
# ENTRYPOINT, CMD, USER, VOLUME, EXPOSE and HEALTHCHECK; keep the two alike.
FROM scratch
ARG VERSION=dev
ARG COMMIT=
LABEL org.opencontainers.image.title="fifoq" \
      org.opencontainers.image.description="A server that speaks the Amazon SQS API, FIFO queues first" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/fifoq/fifoq" \
      org.opencontainers.image.licenses="Apache-2.0"
# The user the server runs as has a name (fifoq, 65532) for ps, docker top
# and the like; the CA certificates (Debian's, from the build stage) let
# fifoq reach HTTPS endpoints: --join, healthcheck --url, backup --endpoint.
COPY packaging/image/passwd packaging/image/group /etc/
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/fifoq /usr/local/bin/fifoq
# The data directory belongs to the unprivileged user the server runs as.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 9324
# The image has no shell and no curl: fifoq asks its own readiness probe,
# which answers 200 once the log takes writes.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/fifoq", "healthcheck", "--url", "http://127.0.0.1:9324/readyz"]
ENTRYPOINT ["/usr/local/bin/fifoq"]
CMD ["serve", "--listen", "0.0.0.0:9324", "--data-dir", "/data"]
