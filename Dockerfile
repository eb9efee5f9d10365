# syntax=docker/dockerfile:1
# One image per in-cluster binary; `make docker-build` builds each as
#   docker build --target flotilla-manager --build-arg BINARY=flotilla-manager \
#     -t ghcr.io/flotilla-io/flotilla-manager:dev .
# They have the shape `make images` builds without Docker (hack/imagebuild):
# the static binary alone on an empty base, entrypoint /<binary>, user 65532.
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG BINARY
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    test -n "${BINARY}" || { echo "set --build-arg BINARY=<the --target>"; exit 1; }; \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/${BINARY} ./cmd/${BINARY}

# ENTRYPOINT does not expand build arguments, hence one stage per binary.
FROM scratch AS flotilla-manager
LABEL org.opencontainers.image.source="https://github.com/flotilla-io/flotilla" org.opencontainers.image.title="flotilla-manager"
COPY --from=build /out/flotilla-manager /flotilla-manager
USER 65532:65532
ENTRYPOINT ["/flotilla-manager"]

FROM scratch AS flotilla-estimator
LABEL org.opencontainers.image.source="https://github.com/flotilla-io/flotilla" org.opencontainers.image.title="flotilla-estimator"
COPY --from=build /out/flotilla-estimator /flotilla-estimator
USER 65532:65532
ENTRYPOINT ["/flotilla-estimator"]

FROM scratch AS flotilla-agent
LABEL org.opencontainers.image.source="https://github.com/flotilla-io/flotilla" org.opencontainers.image.title="flotilla-agent"
COPY --from=build /out/flotilla-agent /flotilla-agent
USER 65532:65532
ENTRYPOINT ["/flotilla-agent"]
