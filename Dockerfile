# The loom binary in a distroless image. Templates are not baked in: mount
# them (deploy/loom.yaml mounts a ConfigMap per set under /templates).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY engine/ engine/
COPY internal/ internal/
# docker build --build-arg VERSION=v0.1.0 sets what `loom version` says.
ARG VERSION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -X github.com/loom-operator/loom/internal/version.Version=${VERSION}" -o /out/loom ./cmd/loom

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/loom /loom
USER 65532:65532
ENTRYPOINT ["/loom"]
