# slogate as a container image: a static binary on distroless/static (CA certificates,
# tzdata, /etc/passwd with a nonroot user, no shell), run as that non-root user.
#
#   docker build -t slogate --build-arg VERSION=v1.2.3 .
#   docker run --rm --network host -v "$PWD:/work" -w /work slogate gate -c slogate.yaml -r slogate-out
#
# docs/action.md ("Container image") says how the container reaches an engine on the host.

# The build stage runs on the builder's platform and cross-compiles, so that a multi-arch
# build (docker buildx --platform linux/amd64,linux/arm64) needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
ARG TARGETOS TARGETARCH
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false GOWORK=off \
    go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/slogate/slogate/cli.Version=${VERSION} -X github.com/slogate/slogate/cli.Commit=${COMMIT} -X github.com/slogate/slogate/cli.Date=${DATE}" \
      -o /out/slogate ./cmd/slogate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/slogate /usr/local/bin/slogate
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/slogate"]
CMD ["--help"]
