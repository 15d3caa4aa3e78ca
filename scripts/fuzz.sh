#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers that read untrusted bytes (the harness is the
# separate crate fuzz/, one binary per target; seeds in fuzz/corpus/<target>/).
#
#   scripts/fuzz.sh TARGET SECONDS       fuzz one target for SECONDS
#   scripts/fuzz.sh --smoke              every target for a few seconds (CI: scripts/test.sh)
#   scripts/fuzz.sh --long SECONDS       every target for SECONDS each, FUZZ_JOBS (default 2)
#                                        at a time, and record the figures in fuzz/results.json
#                                        (rendered into BENCHMARKS.md by scripts/bench/report.py)
#   scripts/fuzz.sh --list               the targets
#
# The fuzzer is AFL++ through the `afl` crate on stable Rust: `cargo-afl` (pinned below)
# is installed with `cargo install --locked` when missing; installing it builds AFL++
# from its bundled source under ~/.local/share/afl.rs. Builds and fuzzer state live in
# the git-ignored fuzz/target/ (fuzz/target/afl/<target>/). Prints execs, execs/s,
# crashes and hangs per target and exits 1 when any target crashed; a crashing input
# is in fuzz/target/afl/<target>/default/crashes/ (replay it with
# `fuzz/target/release/<target> < FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."

AFL_VERSION=0.18.2 # keep equal to the `afl` dependency in fuzz/Cargo.toml
SMOKE_SECONDS="${FUZZ_SMOKE_SECONDS:-8}"
TARGETS=(skill_md commands asset_name jsonl_store memory_document mock_script mcp_content http_body)

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
jobs="${CARGO_BUILD_JOBS:-2}"
out_root="fuzz/target/afl"

usage() {
    echo "usage: scripts/fuzz.sh TARGET SECONDS | --smoke | --long SECONDS | --list" >&2
    exit 2
}

install_fuzzer() {
    if ! cargo afl --version 2>/dev/null | grep -qE "^cargo-afl $AFL_VERSION( |\$)"; then
        echo "fuzz: installing cargo-afl $AFL_VERSION (builds AFL++)" >&2
        cargo install --locked cargo-afl --version "$AFL_VERSION" -j "$jobs"
    fi
    local release
    release="$(rustc -vV | sed -n 's/^release: //p')"
    if ! compgen -G "${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs/rustc-$release-*/afl.rs-$AFL_VERSION/afl/bin/afl-fuzz" >/dev/null; then
        echo "fuzz: building AFL++ for rustc $release" >&2
        cargo afl config --build --force
    fi
}

build() { # build [TARGET...]
    local bins=()
    for t in "$@"; do bins+=(--bin "$t"); done
    (cd fuzz && cargo afl build --release --locked -j "$jobs" "${bins[@]}")
}

stat() { # stat FILE KEY
    sed -n "s/^$2 *: *//p" "$1" | head -n 1
}

# run TARGET SECONDS: fuzz from the committed seeds into a fresh state directory.
run() {
    local target="$1" seconds="$2" dir="$out_root/$1"
    rm -rf "$dir"
    mkdir -p "$dir/tmp"
    # No UI; a shared machine: no CPU binding, no CPU-governor or core-pattern checks
    # (crashes are read from the state directory, not from core dumps).
    AFL_NO_UI=1 AFL_QUIET=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 \
        AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_CRASH_README=1 \
        TMPDIR="$PWD/$dir/tmp" \
        cargo afl fuzz -V "$seconds" -t 1000 -i "fuzz/corpus/$target" -o "$dir" \
        -- "fuzz/target/release/$target" >"$dir/afl.log" 2>&1 || {
        echo "fuzz: afl-fuzz failed for $target; last lines of $dir/afl.log:" >&2
        tail -n 20 "$dir/afl.log" >&2
        return 1
    }
    rm -rf "$dir/tmp"
}

# report TARGET: one line of figures; the exit status says whether it crashed.
report() {
    local target="$1" stats="$out_root/$1/default/fuzzer_stats"
    local execs rate crashes hangs seconds
    execs="$(stat "$stats" execs_done)"
    seconds="$(stat "$stats" run_time)"
    rate="$(awk -v e="$execs" -v s="$seconds" 'BEGIN { printf "%.0f", (s > 0 ? e / s : 0) }')"
    crashes="$(stat "$stats" saved_crashes)"
    hangs="$(stat "$stats" saved_hangs)"
    printf '%-12s %12s execs %9s execs/s %4s s %3s crashes %3s hangs\n' \
        "$target" "$execs" "$rate" "$seconds" "$crashes" "$hangs"
    if [ -n "$results" ]; then
        printf '{"target":"%s","execs":%s,"seconds":%s,"execs_per_sec":%s,"crashes":%s,"hangs":%s}\n' \
            "$target" "$execs" "$seconds" "$rate" "$crashes" "$hangs" >>"$results"
    fi
    if [ "$crashes" != 0 ]; then
        ls -1 "$out_root/$target/default/crashes/"id:* | sed 's/^/    crash: /'
        return 1
    fi
}

# fuzz_all SECONDS PARALLEL: every target, PARALLEL at a time.
fuzz_all() {
    local seconds="$1" parallel="$2" pids=() failed=0
    for target in "${TARGETS[@]}"; do
        run "$target" "$seconds" &
        pids+=($!)
        if [ "${#pids[@]}" -ge "$parallel" ]; then
            wait "${pids[0]}" || failed=1
            pids=("${pids[@]:1}")
        fi
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" = 0 ] || exit 1
    local crashed=0
    for target in "${TARGETS[@]}"; do report "$target" || crashed=1; done
    return "$crashed"
}

results=""
case "${1:-}" in
    --list)
        printf '%s\n' "${TARGETS[@]}"
        ;;
    --smoke)
        [ $# -eq 1 ] || usage
        start=$SECONDS
        install_fuzzer
        # A smoke run checks that every target builds, starts and survives its seeds
        # plus a few seconds of mutation; unoptimized code builds several times faster
        # (AFL_OPT_LEVEL, read by cargo-afl; long runs keep its default of 3).
        export AFL_OPT_LEVEL="${AFL_OPT_LEVEL:-0}"
        build
        fuzz_all "$SMOKE_SECONDS" 1
        echo "fuzz smoke: ${#TARGETS[@]} targets, $((SECONDS - start)) s in all" >&2
        ;;
    --long)
        [ $# -eq 2 ] || usage
        install_fuzzer
        build
        results="$out_root/results.jsonl"
        mkdir -p "$out_root"
        : >"$results"
        started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        status=0
        fuzz_all "$2" "${FUZZ_JOBS:-2}" || status=1
        python3 - "$results" "$started" "$2" "${FUZZ_JOBS:-2}" >fuzz/results.json <<'EOF'
import json, subprocess, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(json.dumps({
    "date": sys.argv[2],
    "command": f"FUZZ_JOBS={sys.argv[4]} scripts/fuzz.sh --long {sys.argv[3]}",
    "fuzzer": subprocess.run(["cargo", "afl", "--version"], capture_output=True, text=True).stdout.strip(),
    "cores": int(subprocess.run(["nproc"], capture_output=True, text=True).stdout),
    "targets": rows,
    "total_execs": sum(r["execs"] for r in rows),
}, indent=2))
EOF
        echo "fuzz: figures in fuzz/results.json" >&2
        exit "$status"
        ;;
    -*|"")
        usage
        ;;
    *)
        [ $# -eq 2 ] || usage
        printf '%s\n' "${TARGETS[@]}" | grep -qx "$1" || { echo "fuzz: unknown target $1 (--list)" >&2; exit 2; }
        install_fuzzer
        build "$1"
        run "$1" "$2"
        report "$1"
        ;;
esac
