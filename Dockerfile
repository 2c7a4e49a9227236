# fifoq container image: a static binary on an empty base, run as a
# non-root user, with its data in a volume.
#
#   docker build -t fifoq --build-arg VERSION=$(git describe --always --dirty) .
#   docker run -p 9324:9324 -v fifoq-data:/data \
#     -e FIFOQ_ACCESS_KEY_ID=... -e FIFOQ_SECRET_ACCESS_KEY=... fifoq
#
# In the container fifoq listens on 0.0.0.0:9324, so it requires
# credentials (or an explicit --insecure), as it does anywhere beyond
# loopback.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO off for a static binary that runs on an empty base image.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/fifoq ./cmd/fifoq \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /out/fifoq /usr/local/bin/fifoq
# The data directory belongs to the unprivileged user the server runs as.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 9324
ENTRYPOINT ["/usr/local/bin/fifoq"]
CMD ["serve", "--listen", "0.0.0.0:9324", "--data-dir", "/data"]
