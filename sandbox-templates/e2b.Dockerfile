# E2B template for `bcb evaluate --execution e2b`: the bcb binary and the evaluation env that
# `bcb env setup` installs from the lock bcb embeds (env/lock-py311.txt). Nothing is cloned
# from a moving branch: the image is built from this checkout.
#   e2b template build -c sandbox-templates/e2b.toml   (run from the repository root)
# BCB_LOCK_DIGEST is `bcb env`'s lock digest; a test keeps it equal to the embedded lock's, and
# the build fails if the installed env was built from another lock.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin bcb

FROM python:3.11-slim-bookworm
ARG BCB_LOCK_DIGEST=a66845a89e8fa3431d3bcd7e9c696051
RUN apt-get update && apt-get install -y --no-install-recommends \
        build-essential pkg-config libgl1 libglib2.0-0 fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*
RUN useradd -m -u 1000 user || true
COPY --from=build /src/target/release/bcb /usr/local/bin/bcb
USER user
ENV HOME=/home/user
RUN bcb env setup --base-python /usr/local/bin/python3.11 \
    && test "$(cat /home/user/.cache/bcb/eval-env-py311/.bcb-env-lock)" = "$BCB_LOCK_DIGEST" \
    && bcb dataset --subset full >/dev/null && bcb dataset --subset hard >/dev/null
ENV BCB_OFFLINE=1
WORKDIR /home/user
