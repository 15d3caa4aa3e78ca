# Recipes for everyday work; `just check` is what CI runs (scripts/test.sh).

default:
    @just --list

# Build every crate.
build:
    cargo build --workspace

# Format the code.
fmt:
    cargo fmt --all

# fmt --check, clippy -D warnings (all targets: benches and examples too).
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --all-features -- -D warnings

# Run the tests (without installing peers).
test:
    cargo test --workspace --all-features

# Rustdoc with warnings as errors.
doc:
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

# Everything CI runs: peers, fmt, clippy, tests, the benchmark smoke run, docs.
check:
    scripts/test.sh

# Criterion benchmarks (release profile).
bench *ARGS:
    cargo bench --workspace {{ARGS}}

# Regenerate BENCHMARKS.md (full run, about 20 minutes on 2 cores).
benchmarks:
    scripts/benchmarks.sh

# Install or refresh the third-party test peers into .peers/.
peers:
    tests/peers/install.sh
