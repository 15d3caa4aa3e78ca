# syntax=docker/dockerfile:1
# mecated as a container: built with the Rust image, run on distroless (no shell, no
# package manager, no curl) as the non-root user 65532. The health check is the
# binary's own `mecated healthcheck` (one GET /healthz), since the image has no curl.
#
#   docker build -t mecated .
#   docker run -p 8081:8081 -e MECATED_AUTH_TOKEN=... -e OPENAI_API_KEY=... mecated \
#     serve --http-addr 0.0.0.0:8081 --workspace /workspace --toolhive=false --provider openai-chat

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin mecated \
    && install -D -m 0755 target/release/mecated /out/mecated \
    && mkdir -p /out/workspace

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/mecated /usr/local/bin/mecated
COPY --from=build --chown=65532:65532 /out/workspace /workspace
USER 65532:65532
ENV HOME=/home/nonroot
WORKDIR /workspace
EXPOSE 8081
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/mecated", "healthcheck", "--http-addr", "127.0.0.1:8081", "--timeout-secs", "4"]
ENTRYPOINT ["/usr/local/bin/mecated"]
CMD ["serve", "--http-addr", "0.0.0.0:8081", "--workspace", "/workspace", "--toolhive=false"]
