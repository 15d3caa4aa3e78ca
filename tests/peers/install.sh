#!/usr/bin/env bash
# Installs the third-party test peers into .peers/ (git-ignored). Idempotent and
# cached: each part hashes its committed manifests and reinstalls only when the hash
# differs from .peers/<part>/.stamp. Talks only to the package registries.
#
# Parts (each only when its manifest is committed):
#   npm   tests/peers/package.json + package-lock.json -> .peers/npm   (npm ci)
#   venv  tests/peers/requirements.txt                 -> .peers/venv  (python3 -m venv, pip install -r)
# System packages (apt-get, only when missing): PostgreSQL server binaries (the
# store tests start throwaway clusters from /usr/lib/postgresql/<version>/bin), the
# openssl CLI (their TLS certificates), mkfs.xfs (the workspace-copy tests clone
# files on a loop-mounted XFS image), and Debian's chromium with chromium-driver (the
# page's tests drive a real headless browser over WebDriver).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
peers="${MECATED_PEERS_DIR:-$root/.peers}"
manifests="$root/tests/peers"
mkdir -p "$peers"

exec 9>"$peers/.lock"
flock 9

stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

fresh() { # part stamp -> 0 when the installed part matches
    [ -f "$peers/$1/.stamp" ] && [ "$(cat "$peers/$1/.stamp")" = "$2" ]
}

missing_debs=()
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing_debs+=(postgresql)
command -v openssl >/dev/null || missing_debs+=(openssl)
[ -x /usr/sbin/mkfs.xfs ] || [ -x /sbin/mkfs.xfs ] || missing_debs+=(xfsprogs)
command -v chromium >/dev/null || missing_debs+=(chromium)
command -v chromedriver >/dev/null || missing_debs+=(chromium-driver)
if [ "${#missing_debs[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing ${missing_debs[*]} with apt-get" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_debs[@]}" >/dev/null
    else
        echo "warning: ${missing_debs[*]} missing and apt-get unavailable (not root?): install them for the store tests" >&2
    fi
fi

if [ -f "$manifests/package.json" ] && [ -f "$manifests/package-lock.json" ]; then
    stamp="$(stamp_of "$manifests/package.json" "$manifests/package-lock.json")"
    if ! fresh npm "$stamp"; then
        echo "installing npm peers into $peers/npm" >&2
        rm -rf "$peers/npm"
        mkdir -p "$peers/npm"
        cp "$manifests/package.json" "$manifests/package-lock.json" "$peers/npm/"
        (cd "$peers/npm" && npm ci --no-audit --no-fund --loglevel=error)
        echo "$stamp" >"$peers/npm/.stamp"
    fi
fi

if [ -f "$manifests/requirements.txt" ]; then
    stamp="$(stamp_of "$manifests/requirements.txt")"
    if ! fresh venv "$stamp"; then
        echo "installing Python peers into $peers/venv" >&2
        rm -rf "$peers/venv"
        python3 -m venv "$peers/venv"
        "$peers/venv/bin/pip" install --quiet --disable-pip-version-check -r "$manifests/requirements.txt"
        echo "$stamp" >"$peers/venv/.stamp"
    fi
fi

{
    echo "node: $(node --version 2>/dev/null || echo none)"
    echo "python: $(python3 --version 2>&1 || echo none)"
    echo "postgresql: $(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1 || echo none)"
    echo "chromium: $(chromium --version 2>/dev/null || echo none)"
    [ -x "$peers/npm/node_modules/.bin/node" ] && echo "peer node: $("$peers/npm/node_modules/.bin/node" --version)"
    [ -x "$peers/venv/bin/pip" ] && "$peers/venv/bin/pip" freeze --disable-pip-version-check 2>/dev/null | sed 's/^/pip: /'
    [ -f "$peers/npm/package-lock.json" ] && sed -n 's/^    "node_modules\/\(@*[^"]*\)": {$/npm: \1/p' "$peers/npm/package-lock.json" | grep -v '/node_modules/' || true
} >"$peers/versions.txt"
