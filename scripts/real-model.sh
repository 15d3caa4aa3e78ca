#!/usr/bin/env bash
# One tool-call turn end to end against a real OpenAI-compatible model server of your own
# (opt-in, never run in CI). It builds, downloads and starts nothing: point it at a server
# that is already running, for example llama.cpp's
#
#   llama-server -m model.gguf --jinja --port 8080        # --jinja enables tool calls
#
#   scripts/real-model.sh http://127.0.0.1:8080/v1 [MODEL] [-- extra mecated run flags]
#
# The URL is the base that ends in /v1 (default: $MECATED_MODEL_URL, else
# http://127.0.0.1:8080/v1); MODEL is the name sent (default: $MECATED_MODEL, else
# "local"; llama-server serves whatever it loaded under any name). The key is
# $OPENAI_API_KEY when set, else a placeholder (llama-server without --api-key ignores
# it). The mecated binary is $MECATED, else target/release/mecated, else
# target/debug/mecated (build one first: cargo build -p app --bin mecated).
#
# The run reads a file through the Read tool and must answer with the word in it; the
# events go to a JSONL file in a temporary directory whose path is printed. Try
# `-- --max-tokens 64` to see a cut-off call refused, `-- --stream=false` for whole
# answers; a server that is still loading its model shows `model.retry` events.
set -euo pipefail
cd "$(dirname "$0")/.."

url="${MECATED_MODEL_URL:-http://127.0.0.1:8080/v1}"
model="${MECATED_MODEL:-local}"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then url="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then model="$1"; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi

bin="${MECATED:-}"
if [ -z "$bin" ]; then
  for candidate in target/release/mecated target/debug/mecated; do
    if [ -x "$candidate" ]; then bin="$candidate"; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "real-model.sh: no mecated binary: build one (cargo build -p app --bin mecated) or set MECATED" >&2
  exit 2
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/mecated-real-model.XXXXXX")"
mkdir -p "$dir/ws"
word="heron-$RANDOM"
printf 'The secret word is %s.\n' "$word" >"$dir/ws/notes.txt"
events="$dir/events.jsonl"
echo "real-model.sh: $url (model $model), events in $events" >&2

status=0
OPENAI_API_KEY="${OPENAI_API_KEY:-not-needed}" "$bin" run \
  --workspace "$dir/ws" --toolhive=false --no-user-model \
  --provider openai-chat --base-url "$url" --model "$model" \
  --output jsonl "$@" \
  "Use the Read tool to read notes.txt, then answer with the secret word only." \
  >"$events" || status=$?

calls="$(grep -c '"type":"tool.call"' "$events" || true)"
retries="$(grep -c '"type":"model.retry"' "$events" || true)"
result="$(grep '"type":"result"' "$events" | tail -n 1 || true)"
echo "real-model.sh: exit $status, $calls tool call(s), $retries retry wait(s)" >&2
echo "real-model.sh: $result" >&2
if [ "$status" -ne 0 ] || [ "$calls" -eq 0 ] || ! grep -q "$word" <<<"$result"; then
  echo "real-model.sh: FAILED (expected a Read call and an answer naming $word)" >&2
  exit 1
fi
echo "real-model.sh: ok" >&2
