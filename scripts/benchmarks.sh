#!/usr/bin/env bash
# Regenerates BENCHMARKS.md: the one benchmark command (see the top of BENCHMARKS.md).
#
#   scripts/benchmarks.sh           full run (release; 15-20 minutes on 2 cores with a warm build),
#                                   writes BENCHMARKS.md at the repository root
#   scripts/benchmarks.sh --smoke   every step on a tiny configuration (dev profile,
#                                   criterion --quick, a few MCP calls); renders the
#                                   report to a temporary file and checks it. CI runs
#                                   this from scripts/test.sh so the scripts cannot rot.
#   --out FILE                      write the report elsewhere
#
# Needs the test peers (installed here by tests/peers/install.sh; MECATED_PEERS_DIR
# overrides where they live). A missing peer fails the run, under CI=true and locally.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
out=BENCHMARKS.md
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) mode=smoke; out="" ;;
        --out) out="$2"; shift ;;
        *) echo "usage: scripts/benchmarks.sh [--smoke] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
work="${CARGO_TARGET_DIR:-target}/benchmarks/$mode"
rm -rf "$work"
mkdir -p "$work"

tests/peers/install.sh
python3 scripts/bench/run.py --mode "$mode" --work "$work"

if [ -z "$out" ]; then
    out="$work/BENCHMARKS.md"
fi
# report.py checks that every section is there and sections 1-5 have every value.
python3 scripts/bench/report.py "$work/results.json" "$out"
echo "benchmarks ($mode): report in $out, raw results in $work" >&2
