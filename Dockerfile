# The image docs/distributed.md runs: `leasesim` on PATH and this repository's scenarios in
# /work (the working directory, so that every shard sees scenarios at the same paths).
#
#   docker build -t registry.example.com/leasesim:0.1.0 .
#   docker run --rm registry.example.com/leasesim:0.1.0 leasesim list
#
# Building needs the network (base images, crates.io); CI does not build it. The build uses
# Cargo.lock as committed (--locked), so the image runs the same code as a checkout.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock rustfmt.toml ./
COPY sim-core sim-core
COPY sim-cli sim-cli
COPY benches benches
RUN cargo build --release --locked -p sim-cli --bin leasesim

FROM debian:bookworm-slim
COPY --from=build /src/target/release/leasesim /usr/local/bin/leasesim
WORKDIR /work
COPY scenarios scenarios
# Run as an unprivileged user; results go to a mounted volume (/results in the examples).
RUN useradd --uid 10001 --no-create-home leasesim && mkdir -p /results && chown leasesim /results
USER leasesim
CMD ["leasesim", "--help"]
