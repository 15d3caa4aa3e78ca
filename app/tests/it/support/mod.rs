//! Shared test support: workspaces and configs, the `mecated` binary, log capture,
//! MCP fixture servers, bounded waits, a real ACP client.

pub mod acp_client;
pub mod gated_model;
pub mod http;
pub use test_peers::logs;
pub mod mcp_fixture;
pub mod oauth;
pub mod pty;
pub mod serve;
pub mod webdriver;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use adapter_mcp::{ClientServerKind, ClientServerSpec, ServerConfig};
use adapter_skillfs::HostEnv;
use app::{AppConfig, ModelConfig};
use engine_ports::ToolCall;

/// A temporary directory with a `ws/` workspace (holding a README) inside it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws/README.md"), "# test workspace\n").unwrap();
        Self { dir }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub fn ws(&self) -> PathBuf {
        self.path("ws")
    }

    /// Writes `text` at `relative` (parents created).
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A skill `name` under `skills_dir` (relative).
    pub fn skill(&self, skills_dir: &str, name: &str, description: &str) -> PathBuf {
        self.write(
            &format!("{skills_dir}/{name}/SKILL.md"),
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nDo the {name} thing.\n"),
        );
        self.path(skills_dir)
    }
}

/// A config over `scratch`'s workspace: memory store, mock model, no MCP, no
/// ToolHive, and a host environment without home (no user skill tiers).
pub fn config(scratch: &Scratch) -> AppConfig {
    let mut cfg = AppConfig::new(scratch.ws());
    cfg.skills.host = Some(isolated_host(&scratch.ws()));
    cfg
}

/// A host environment rooted at `cwd` with no home and no XDG directory.
pub fn isolated_host(cwd: &Path) -> HostEnv {
    HostEnv {
        cwd: cwd.to_path_buf(),
        home: None,
        xdg_config_home: None,
    }
}

/// An operator HTTP server config with a short connect timeout.
pub fn http_server(name: &str, url: &str) -> ServerConfig {
    ServerConfig::http(name, url, None).with_connect_timeout(Duration::from_secs(10))
}

/// A client-provided streamable-HTTP server spec.
pub fn client_spec(name: &str, url: &str) -> ClientServerSpec {
    ClientServerSpec {
        name: name.to_owned(),
        kind: ClientServerKind::Http {
            url: url.to_owned(),
            headers: Vec::new(),
        },
    }
}

/// A mock model making one call of `tool` with `args`, then answering `done`.
pub fn one_call_model(tool: &str, args: &str) -> ModelConfig {
    ModelConfig::MockScript(MockScript::new([
        MockTurn::text("calling").with_call(ToolCall::new("c1", tool, args)),
        MockTurn::text("done"),
    ]))
}

/// Waits until `condition` holds, at most `limit` (a bounded wait on an observable
/// condition, never a sleep standing in for synchronisation). Returns whether it held.
pub async fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What one `mecated` invocation gave.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// The `mecated` binary with a hermetic environment: no provider keys, no log filter,
/// a home of its own (so memory and the user model default under it), ToolHive pointed at a closed port.
pub fn mecated_command(home: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(hermetic_mecated(home));
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// The `mecated` binary with the hermetic environment of [`mecated_command`], as a
/// blocking command (the pseudo-terminal tests give it their own stdio).
pub fn hermetic_mecated(home: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mecated"));
    command
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MECATED_LOG")
        .env_remove("MECATED_AUTH_TOKEN")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        // No telemetry unless a test asks for it.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_SDK_DISABLED")
        .env("HOME", home)
        // The administrator's managed settings: a file in the test's home (absent
        // unless a test writes it), never the host's.
        .env("MECATL_MANAGED_SETTINGS", home.join("managed-settings.json"))
        .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1");
    command
}

/// `mecated run --workspace <scratch ws> --toolhive=false --mock-script <script>`
/// followed by `extra` (the script is written to the scratch directory first).
pub async fn mecated_run(scratch: &Scratch, script: &str, extra: &[&str]) -> Output {
    mecated_run_with_env(scratch, script, extra, &[]).await
}

/// As [`mecated_run`], with `envs` set for the process.
pub async fn mecated_run_with_env(
    scratch: &Scratch,
    script: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> Output {
    let script = scratch.write("script.json", script).display().to_string();
    let ws = scratch.ws().display().to_string();
    let mut args = vec![
        "run",
        "--workspace",
        ws.as_str(),
        "--toolhive=false",
        "--mock-script",
        script.as_str(),
    ];
    args.extend(extra);
    mecated(scratch.dir.path(), &args, envs).await
}

/// Runs `mecated args…` (hermetic, see [`mecated_command`]) with extra `envs`.
pub async fn mecated(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = mecated_command(home);
    command.args(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    let started = Instant::now();
    let output = command.output().await.unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Parses JSON Lines (panics naming the bad line).
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Where the hooks of [`logging_hooks`] append their inputs: inside the workspace,
/// the only place a sandboxed hook may write.
pub const HOOK_LOG: &str = ".hooks.jsonl";

/// A settings file whose `SessionStart`, `UserPromptSubmit` and `Stop` hooks each
/// append their JSON input to [`HOOK_LOG`] in the workspace; the `UserPromptSubmit`
/// hook blocks (exit 2) a prompt naming the vault, with the reason `prompts may not
/// name the vault`.
pub fn logging_hooks(scratch: &Scratch) -> PathBuf {
    let log = |extra: &str| {
        serde_json::json!([{"hooks": [{"type": "command", "command":
            format!("input=$(cat); printf '%s\\n' \"$input\" >> {HOOK_LOG}{extra}")}]}])
    };
    let settings = serde_json::json!({"hooks": {
        "SessionStart": log(""),
        "UserPromptSubmit": log("; case \"$input\" in *vault*) echo 'prompts may not name the vault' >&2; exit 2;; esac"),
        "Stop": log(""),
    }});
    scratch.write("hooks.json", &settings.to_string())
}

/// The inputs the hooks of [`logging_hooks`] got, in order.
pub fn hook_inputs(scratch: &Scratch) -> Vec<serde_json::Value> {
    std::fs::read_to_string(scratch.ws().join(HOOK_LOG))
        .map(|text| json_lines(&text))
        .unwrap_or_default()
}

/// The `hook_event_name` of each input.
pub fn hook_names(inputs: &[serde_json::Value]) -> Vec<String> {
    inputs
        .iter()
        .map(|input| input["hook_event_name"].as_str().unwrap_or_default().to_owned())
        .collect()
}
