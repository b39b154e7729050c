# Build pilot-discovery in a Go image, ship it alone on distroless.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/pilot-discovery ./pilot/cmd/pilot-discovery

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pilot-discovery /usr/local/bin/pilot-discovery
# 15010: ADS (gRPC). 15014: debug, readiness and metrics (HTTP).
EXPOSE 15010 15014
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/pilot-discovery"]
CMD ["discovery", "--config-dir", "/etc/wayfinder/config"]
