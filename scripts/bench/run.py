"""Runs every measurement of BENCHMARKS.md and writes the raw results as JSON.

Called by scripts/benchmarks.sh (which documents the modes); standard library only.

  full   release builds; criterion with 1 s warm-up and 3 s measurement per bench (the
         sample counts the benches set); MCP clients 200 warm-up + 2,000 measured calls,
         3 rounds
  smoke  the same code paths on a tiny configuration: dev profile, criterion --quick,
         a handful of MCP calls, one round (CI runs this to keep the scripts working)

Each step records the load average before and after it, because the machine is shared.
"""

import argparse
import fcntl
import json
import os
import platform
import pty
import select
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS = Path(os.environ.get("MECATED_PEERS_DIR", ROOT / ".peers"))
NODE = PEERS / "npm/node_modules/.bin/node"
EVERYTHING = PEERS / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM = PEERS / "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
TS_SDK = PEERS / "npm/node_modules/@modelcontextprotocol/sdk/package.json"
VENV_PYTHON = PEERS / "venv/bin/python"
MCP_SERVER_GIT = PEERS / "venv/bin/mcp-server-git"
JOBS = os.environ.get("CARGO_BUILD_JOBS", "2")

# The criterion bench targets, with an optional filter and environment. The store
# bench only needs its append and recorder groups and the fresh 100 KiB load (beside
# the PostgreSQL store's); its long-history fixture is shrunk to 10 saves so its setup
# does not dominate the run. After its append group it measures Batched against Never
# in alternating blocks (JSONLSTORE_BENCH_PAIRS pairs).
CRITERION_BENCHES = [
    {"package": "engine-core", "bench": "catalog"},
    {"package": "engine-core", "bench": "dispatch"},
    {"package": "adapter-jsonlstore", "bench": "store", "filter": "append_512B|recorder|load_100KiB/fresh",
     "env": {"JSONLSTORE_BENCH_SAVES": "10"}, "smoke_env": {"JSONLSTORE_BENCH_PAIRS": "2"}},
    # Its recorder p50/p99 loop runs the mode's number of calls (PGSTORE_BENCH_CALLS).
    {"package": "adapter-pgstore", "bench": "pg_store", "calls_env": "PGSTORE_BENCH_CALLS"},
    {"package": "adapter-mcp", "bench": "mcp_overhead"},
    # Its p50/p99 loops run the mode's number of calls (MEMORYFS_BENCH_CALLS).
    {"package": "adapter-memoryfs", "bench": "memory", "calls_env": "MEMORYFS_BENCH_CALLS"},
    # The same calls at the same sizes on PostgreSQL (PGMEMORY_BENCH_CALLS).
    {"package": "adapter-pgstore", "bench": "pg_memory", "calls_env": "PGMEMORY_BENCH_CALLS"},
    {"package": "app", "bench": "build"},
    {"package": "app", "bench": "assembly"},
    # After criterion it measures the OpenTelemetry overhead in alternating blocks
    # (TURN_BENCH_PAIRS pairs).
    {"package": "app", "bench": "turn", "smoke_env": {"TURN_BENCH_PAIRS": "2"}},
    {"package": "app", "bench": "acp"},
    {"package": "app", "bench": "http"},
    {"package": "app", "bench": "delegation"},
    # A smoke run copies a 200-file workspace: 10,000 files take minutes unoptimized.
    {"package": "adapter-fstools", "bench": "fork", "smoke_env": {"FORK_BENCH_DIRS": "2"}},
    {"package": "adapter-fstools", "bench": "sandbox"},
]

MODES = {
    "full": {"profile": "release", "criterion": ["--noplot", "--warm-up-time", "1", "--measurement-time", "3"],
             "warm_up": 200, "calls": 2000, "rounds": 3},
    "smoke": {"profile": "dev",
              "criterion": ["--noplot", "--quick", "--measurement-time", "0.1", "--nresamples", "1000"],
              "warm_up": 5, "calls": 20, "rounds": 1},
}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def machine() -> dict:
    """What the figures were measured on."""
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": "unknown"}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            info["cpu"] = line.split(":", 1)[1].strip()
            break
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            info["memory_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
    info["rustc"] = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    df = subprocess.run(["df", "-T", tempfile.gettempdir()], capture_output=True, text=True).stdout.splitlines()
    info["tmp_filesystem"] = " ".join(df[-1].split()[:2]) if df else "unknown"
    if NODE.exists():
        info["node"] = subprocess.run([NODE, "--version"], capture_output=True, text=True).stdout.strip()
    if VENV_PYTHON.exists():
        info["python"] = subprocess.run([VENV_PYTHON, "--version"], capture_output=True, text=True).stdout.strip()
    return info


def require_peers() -> None:
    """A missing peer fails the run (CI=true never skips); install.sh installs them."""
    missing = [p for p in (NODE, EVERYTHING, FILESYSTEM, TS_SDK, VENV_PYTHON, MCP_SERVER_GIT) if not p.exists()]
    if missing:
        sys.exit("missing peers (run tests/peers/install.sh): " + ", ".join(map(str, missing)))


def cargo_profile_args(profile: str) -> list[str]:
    return ["--release"] if profile == "release" else []


def run_step(name: str, results: dict, fn):
    """Runs one measurement step, recording its wall time and the load around it."""
    log(f"{name}: start (load {load()})")
    before, started = load(), time.monotonic()
    value = fn()
    results["steps"][name] = {"seconds": round(time.monotonic() - started, 1), "load_before": before,
                              "load_after": load()}
    log(f"{name}: done in {results['steps'][name]['seconds']} s")
    return value


# --- criterion -------------------------------------------------------------------

def run_criterion(mode: dict, work: Path) -> dict:
    """Runs each bench target; returns its stdout lines and the estimates it wrote."""
    home = work / "criterion"
    shutil.rmtree(home, ignore_errors=True)
    out = {}
    for bench in CRITERION_BENCHES:
        key = f"{bench['package']}/{bench['bench']}"
        # --workspace: features unify as in the build step (and as in `cargo test`), so
        # nothing is rebuilt here.
        cmd = ["cargo", "bench", "--locked", "-j", JOBS, "--workspace", "--all-features", "--bench", bench["bench"]]
        if mode["profile"] != "release":
            cmd += ["--profile", mode["profile"]]
        cmd += ["--", *mode["criterion"]]
        if "filter" in bench:
            cmd.append(bench["filter"])
        env = {**os.environ, "CRITERION_HOME": str(home), **bench.get("env", {})}
        if mode["profile"] != "release":
            env.update(bench.get("smoke_env", {}))
        if "calls_env" in bench:
            env[bench["calls_env"]] = str(mode["calls"])
        log(f"criterion {key}: {shlex.join(cmd)}")
        before = load()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        (work / f"{key.replace('/', '_')}.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            sys.exit(f"criterion {key} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        out[key] = {"stdout": proc.stdout.splitlines(), "load_before": before, "load_after": load()}
    return {"targets": out, "estimates": read_estimates(home)}


def read_estimates(home: Path) -> dict:
    """criterion's `new/` results by full id: median with its 95 % interval, mean, and
    the spread (min, quartiles, max) of the per-sample times, all in ns per iteration;
    `elements` is the bench's declared throughput (elements per iteration), if any."""
    found = {}
    for meta in home.glob("**/new/benchmark.json"):
        info = json.loads(meta.read_text())
        full_id = info["full_id"]
        throughput = info.get("throughput") or {}
        est = json.loads((meta.parent / "estimates.json").read_text())
        sample = json.loads((meta.parent / "sample.json").read_text())
        per_iter = sorted(t / i for t, i in zip(sample["times"], sample["iters"]))
        found[full_id] = {
            "median": est["median"]["point_estimate"],
            "median_ci": [est["median"]["confidence_interval"]["lower_bound"],
                          est["median"]["confidence_interval"]["upper_bound"]],
            "mean": est["mean"]["point_estimate"],
            "samples": len(per_iter),
            "min": per_iter[0], "p25": quantile(per_iter, 0.25), "p75": quantile(per_iter, 0.75),
            "max": per_iter[-1],
            "elements": throughput.get("Elements"),
        }
    return found


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# --- peers -----------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Everything:
    """server-everything in streamable-HTTP mode on a free loopback port, in its own
    process group, killed by that group on exit (never by name)."""

    def __enter__(self):
        for _ in range(3):  # someone may take the port in between: retry
            port = free_port()
            self.proc = subprocess.Popen([NODE, EVERYTHING, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    self.url = f"http://127.0.0.1:{port}/mcp"
                    return self
                except OSError:
                    time.sleep(0.1)
            self.__exit__()
        sys.exit("server-everything did not start")

    def __exit__(self, *_):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def json_of(cmd: list, **kwargs) -> dict:
    """Runs a driver that prints one JSON object on its last stdout line."""
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"{shlex.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cargo_example(example: str, profile: str) -> list[str]:
    """An example binary the build step made."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return [str(target / ("release" if profile == "release" else "debug") / "examples" / example)]


class Gateway:
    """`mecated mcp serve` on streamable HTTP (a kernel-picked loopback port) over one
    upstream server mounted as `ev`, approving every call (no asks: the figure is the
    gateway's own cost), in its own process group, killed by that group on exit."""

    def __init__(self, profile: str, upstream: str):
        self.profile, self.upstream = profile, upstream

    def __enter__(self):
        self.work = tempfile.TemporaryDirectory()
        env = {k: v for k, v in os.environ.items() if k not in ("MECATED_LOG", "MECATED_AUTH_TOKEN")}
        env.update({"HOME": self.work.name, "MECATED_TOOLHIVE_URL": "http://127.0.0.1:1"})
        cmd = [str(chat_binary(self.profile)), "mcp", "serve", "--workspace", self.work.name, "--toolhive=false",
               "--approve", "all", "--mcp-server", f"ev={self.upstream}", "--http-addr", "127.0.0.1:0"]
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 60
        prefix = "mecated mcp serve: listening on "
        while time.monotonic() < deadline:
            ready = select.select([self.proc.stderr], [], [], max(0.0, deadline - time.monotonic()))[0]
            line = self.proc.stderr.readline() if ready else ""
            if line.startswith(prefix):
                self.url = line[len(prefix):].strip()
                return self
            if not line and self.proc.poll() is not None:
                break
        self.__exit__()
        sys.exit("mecated mcp serve did not start")

    def __exit__(self, *_):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.work.cleanup()


# Pairs of stdio children (one for our client, one for rmcp's) per MCP round.
STDIO_PAIRS = 3


def run_mcp(mode: dict, url: str) -> dict:
    """Echo latency through (a) our McpTool, (b) bare rmcp, (c) the Python SDK and
    (d) the TypeScript SDK on one server, and (a)/(b) again over stdio; then (e) the
    Python and (f) the TypeScript SDK calling the same echo directly and through
    `mecated mcp serve` (the gateway) mounted on that server, alternating call by call
    in one client process; in rounds."""
    counts = ["--warm-up", str(mode["warm_up"]), "--calls", str(mode["calls"])]
    echo = cargo_example("echo_latency", mode["profile"])
    stdio_cmd = [str(NODE), str(EVERYTHING), "stdio"]
    node_env = {**os.environ, "MECATED_PEERS_DIR": str(PEERS)}
    through = "mcp__ev__echo"  # the server's echo as the gateway names it
    rounds = []
    with Gateway(mode["profile"], url) as gateway:
        for r in range(mode["rounds"]):
            log(f"MCP round {r + 1}/{mode['rounds']}")
            http = json_of([*echo, "--url", url, *counts])
            python = json_of([VENV_PYTHON, "scripts/bench/mcp_client.py", url, *counts])
            node = json_of([NODE, "scripts/bench/mcp_client.mjs", url, *counts], env=node_env)
            # Each pair of stdio children settles into a speed of its own (the a/b ratio of
            # single pairs went from 1.03 to 1.15 in one run): several pairs, samples pooled.
            stdio = [json_of([*echo, "--stdio", *stdio_cmd, "--", *counts]) for _ in range(STDIO_PAIRS)]
            # Direct and through the gateway, alternating call by call in one client.
            paired = ["--paired", gateway.url, "--paired-tool", through, *counts]
            gateway_python = json_of([VENV_PYTHON, "scripts/bench/mcp_client.py", url, *paired])
            gateway_node = json_of([NODE, "scripts/bench/mcp_client.mjs", url, *paired], env=node_env)
            rounds.append({"load": load(), "http_ours": http["ours_us"], "http_bare": http["bare_us"],
                           "python": python["samples_us"], "typescript": node["samples_us"],
                           "stdio_ours": [x for one in stdio for x in one["ours_us"]],
                           "stdio_bare": [x for one in stdio for x in one["bare_us"]],
                           "gateway_python": gateway_python["paired_us"],
                           "gateway_python_direct": gateway_python["samples_us"],
                           "gateway_typescript": gateway_node["paired_us"],
                           "gateway_typescript_direct": gateway_node["samples_us"],
                           "python_sdk": python["sdk"], "typescript_sdk": node["sdk"]})
    return {"warm_up": mode["warm_up"], "calls": mode["calls"], "stdio_pairs": STDIO_PAIRS, "rounds": rounds}


def run_disclosure(mode: dict, url: str) -> dict:
    """Per-turn tool definitions with server-everything (HTTP), server-filesystem and
    mcp-server-git (stdio) mounted, progressive tools off, light and deferred; then the
    growth per added tool over synthetic catalogs."""
    with tempfile.TemporaryDirectory() as ws:
        git_env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.test",
                   "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.test"}
        Path(ws, "README.md").write_text("bench\n")
        for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
            subprocess.run(["git", *args], cwd=ws, env=git_env, check=True)
        cmd = [*cargo_example("tool_defs", mode["profile"]), "--workspace", ws,
               "--mcp-server", f"ev={url}",
               "--mcp-stdio", f"fs={shlex.join([str(NODE), str(FILESYSTEM), ws])}",
               "--mcp-stdio", f"git={shlex.join([str(MCP_SERVER_GIT), '-r', ws])}"]
        return json_of(cmd)


def run_long_session(mode: dict) -> dict:
    """Engine time per run over one long session (engine-core's long_session example)."""
    runs, repeats = (500, 5) if mode["profile"] == "release" else (40, 1)
    return json_of([*cargo_example("long_session", mode["profile"]), str(runs), str(repeats)])


def chat_binary(profile: str) -> Path:
    """The `mecated` binary the build step made for `profile`."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / ("release" if profile == "release" else "debug") / "mecated"


def chat_startup(binary: Path, runs: int) -> dict:
    """Time from starting `mecated chat` on a pseudo-terminal (mock model, no MCP server,
    a JSONL store) to its first prompt on screen (the status line under the input), then
    Ctrl-D; one fresh process per run."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "MECATED_LOG")}
        env.update({"HOME": tmp, "TERM": "xterm-256color", "MECATED_TOOLHIVE_URL": "http://127.0.0.1:1"})
        cmd = [str(binary), "chat", "--workspace", str(ws), "--toolhive=false", "--mock",
               "--store-dir", str(Path(tmp) / "store")]
        for _ in range(runs):
            master, slave = pty.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            started = time.perf_counter()
            proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env)
            seen, deadline = b"", started + 30
            while b"mode default" not in seen:
                left = deadline - time.perf_counter()
                if left <= 0 or not select.select([master], [], [], left)[0]:
                    proc.kill()
                    raise RuntimeError(f"mecated chat showed no prompt within 30 s: {seen[-500:]!r}")
                seen += os.read(master, 65536)
            times.append(time.perf_counter() - started)
            os.write(master, b"\x04")
            proc.wait(timeout=30)
            os.close(master)
            os.close(slave)
    times.sort()
    return {"runs": runs, "median_ms": round(quantile(times, 0.5) * 1000, 2),
            "p90_ms": round(quantile(times, 0.9) * 1000, 2), "min_ms": round(times[0] * 1000, 2)}


def run_chat_startup(mode: dict) -> dict:
    """`mecated chat` startup to its first prompt (see chat_startup)."""
    return chat_startup(chat_binary(mode["profile"]), 30 if mode["profile"] == "release" else 3)


def studio_page(binary: Path, runs: int) -> dict:
    """The page of `mecated serve` (Mecatl Studio): its files' total bytes, found from `/`
    by following `/assets/` links and the modules' relative imports, and the time to
    fetch all of them over loopback (what a browser needs before its first paint), one
    fresh connection per file, `runs` times."""
    import re
    import urllib.request
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "MECATED_LOG")}
        env.update({"HOME": tmp, "MECATED_TOOLHIVE_URL": "http://127.0.0.1:1"})
        proc = subprocess.Popen([str(binary), "serve", "--workspace", str(ws), "--toolhive=false", "--mock",
                                 "--http-addr", "127.0.0.1:0"], stderr=subprocess.PIPE, env=env, text=True)
        try:
            base, deadline = None, time.monotonic() + 30
            while base is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("mecated serve did not say where it listens within 30 s")
                line = proc.stderr.readline()
                if not line:
                    raise RuntimeError("mecated serve exited before listening")
                if line.startswith("mecated serve: listening on "):
                    base = line.split("listening on ", 1)[1].strip()

            def get(path: str) -> bytes:
                with urllib.request.urlopen(base + path, timeout=10) as answer:
                    return answer.read()

            def crawl() -> dict:
                files, queue = {}, ["/"]
                while queue:
                    path = queue.pop()
                    if path in files:
                        continue
                    body = get(path)
                    files[path] = len(body)
                    text = body.decode("utf-8", "replace")
                    queue += re.findall(r'(?:href|src)="(/assets/[^"]+)"', text)
                    if path.endswith(".js"):
                        folder = path.rsplit("/", 1)[0]
                        queue += [f"{folder}/{name}" for name in re.findall(r'from "\./([^"]+)"', text)]
                return files

            files = crawl()
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                crawl()
                times.append(time.perf_counter() - started)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    times.sort()
    return {"files": len(files), "bytes": sum(files.values()), "runs": runs,
            "median_ms": round(quantile(times, 0.5) * 1000, 2), "p90_ms": round(quantile(times, 0.9) * 1000, 2)}


def run_studio_page(mode: dict) -> dict:
    """The page's weight and its load over loopback (see studio_page)."""
    return studio_page(chat_binary(mode["profile"]), 50 if mode["profile"] == "release" else 3)


def run_serve_load(mode: dict) -> dict:
    """A real `mecated serve` under load (app's serve_load example): sessions created over
    the run, a number of clients prompting at once (mock model: a Read and an answer each),
    on the JSONL store and on PostgreSQL (`--store-url`); then SIGTERM."""
    sessions, concurrency = (1000, 200) if mode["profile"] == "release" else (12, 4)
    args = ["--sessions", str(sessions), "--concurrency", str(concurrency),
            "--max-live-sessions", str(max(concurrency + concurrency // 4, 8))]
    driver = cargo_example("serve_load", mode["profile"])
    return {"jsonl": json_of([*driver, *args]), "postgres": json_of([*driver, *args, "--postgres"])}


def build(mode: dict) -> None:
    """Builds the drivers and bench targets first, so no compile runs inside a measurement."""
    # Workspace-wide, like `cargo test --workspace --all-features`: one feature set, so
    # the smoke run in CI reuses what the test step built.
    subprocess.run(["cargo", "build", "--locked", "-j", JOBS, "--workspace", "--all-features", "--examples",
                    *cargo_profile_args(mode["profile"])], cwd=ROOT, check=True)
    benches = ["cargo", "bench", "--no-run", "--locked", "-j", JOBS, "--workspace", "--all-features"]
    if mode["profile"] != "release":
        benches += ["--profile", mode["profile"]]
    for b in CRITERION_BENCHES:
        benches += ["--bench", b["bench"]]
    subprocess.run(benches, cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=sorted(MODES), default="full")
    parser.add_argument("--work", type=Path, required=True, help="directory for logs and raw results")
    args = parser.parse_args()
    mode = MODES[args.mode]
    args.work = args.work.resolve()  # bench binaries run in their package directory
    args.work.mkdir(parents=True, exist_ok=True)
    require_peers()
    started = time.monotonic()
    results = {"mode": args.mode, "settings": mode, "machine": machine(), "load_start": load(),
               "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "steps": {}}
    run_step("build", results, lambda: build(mode))
    results["criterion"] = run_step("criterion", results, lambda: run_criterion(mode, args.work))
    results["long_session"] = run_step("long_session", results, lambda: run_long_session(mode))
    results["chat_startup"] = run_step("chat_startup", results, lambda: run_chat_startup(mode))
    results["studio_page"] = run_step("studio_page", results, lambda: run_studio_page(mode))
    results["serve_load"] = run_step("serve_load", results, lambda: run_serve_load(mode))
    with Everything() as everything:
        results["mcp"] = run_step("mcp", results, lambda: run_mcp(mode, everything.url))
        results["disclosure"] = run_step("disclosure", results, lambda: run_disclosure(mode, everything.url))
    results["load_end"] = load()
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["seconds"] = round(time.monotonic() - started)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    log(f"results in {args.work / 'results.json'}")


if __name__ == "__main__":
    main()
