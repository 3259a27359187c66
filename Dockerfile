# The gantry binary on a small Debian base with bash (ShellScript steps) and CA certificates.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/gantry ./cmd/gantry

FROM debian:12.8-slim
RUN apt-get update && apt-get install -y --no-install-recommends bash ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/gantry /usr/local/bin/gantry
RUN useradd --create-home --uid 10001 gantry
USER gantry
ENV GANTRY_HOME=/home/gantry/.gantry
ENTRYPOINT ["gantry"]
