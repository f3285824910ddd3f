# syntax=docker/dockerfile:1
# fencegate as a static binary on a distroless base (no shell, no libc,
# runs as an unprivileged user). Build:
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t fencegate:v0.1.0 .
# Run the registry (embedded etcd in the volume; give tokens or mTLS files):
#   docker run -v fencegate-data:/var/lib/fencegate -v $PWD/tokens:/etc/fencegate/tokens:ro \
#     -e FENCEGATE_TOKEN_FILE=/etc/fencegate/tokens -p 7420:7420 fencegate:v0.1.0

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG COMMIT=""
RUN scripts/build-static.sh /out/fencegate "$VERSION" "$COMMIT" && /out/fencegate --version

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fencegate /usr/local/bin/fencegate
# serve's flags as environment variables (see deploy/fencegate.env).
ENV FENCEGATE_DATA_DIR=/var/lib/fencegate \
    FENCEGATE_LISTEN=0.0.0.0:7420
VOLUME ["/var/lib/fencegate"]
EXPOSE 7420
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/fencegate"]
CMD ["serve"]
