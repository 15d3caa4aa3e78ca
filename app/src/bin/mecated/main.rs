//! `mecated`: the Mecatl command line — `tools`, `run`, `chat` (also `mecated` alone
//! on a terminal), `acp`, `serve`, `healthcheck`, `skills list|promote`, `memory list|show|forget`,
//! `demo`, `mcp login|logout|list|serve`, and the hidden `mcp conformance-client`.

mod acp;
mod chat;
mod cli;
mod conformance;
mod demo;
mod healthcheck;
mod input_prompt;
mod mcp;
mod mcp_serve;
mod memory;
mod out;
mod policy;
mod run;
mod serve;
mod skills;
mod to_config;
mod tools;
mod usage;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser as _;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command, McpCommand, PolicyCommand, SkillsCommand};

/// See [`app::Allocator`].
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

/// The variable that sets the log filter (`tracing` directives, default `warn`, `info`
/// for `serve`).
const LOG_ENV: &str = "MECATED_LOG";

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    // `mecated` alone on a terminal is a chat; elsewhere it prints the usage.
    if args.len() == 1 && adapter_tui::stdio_is_terminal() {
        args.push("chat".into());
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => return usage::clap_failure(&error, &args),
    };
    // `serve` is a long-running server: its operators want to see what it does.
    let default_filter = if matches!(cli.command, Command::Serve(_)) {
        "info"
    } else {
        "warn"
    };
    init_logging(default_filter);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            out::stderr(&format!("error: cannot start the async runtime: {error}"));
            return ExitCode::FAILURE;
        }
    };
    // The command runs as a task on the runtime's workers, not on this thread: the
    // events of a run then wake their reader on a worker (usually the one the run
    // is on) rather than this thread, a cross-thread wake-up per event.
    let joined = runtime.block_on(async { tokio::spawn(dispatch(cli)).await });
    runtime.shutdown_timeout(Duration::from_secs(2));
    match joined {
        Ok(code) => code,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => ExitCode::FAILURE,
    }
}

async fn dispatch(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Tools(args) => tools::tools(args).await,
        Command::Run(args) => run::run(args).await,
        Command::Chat(args) => chat::chat(args).await,
        Command::Acp(args) => acp::acp(args).await,
        Command::Serve(args) => serve::serve(args).await,
        Command::Healthcheck(args) => healthcheck::healthcheck(&args).await,
        Command::Skills(SkillsCommand::List(args)) => skills::list(&args),
        Command::Skills(SkillsCommand::Promote(args)) => skills::promote_draft(&args),
        Command::Memory(command) => memory::memory(command).await,
        Command::Demo(args) => demo::demo(args).await,
        Command::Policy(PolicyCommand::Check(args)) => policy::check(args).await,
        Command::Mcp(McpCommand::ConformanceClient { url }) => conformance::conformance_client(&url).await,
        Command::Mcp(McpCommand::Login(args)) => mcp::login(args).await,
        Command::Mcp(McpCommand::Logout(args)) => mcp::logout(&args),
        Command::Mcp(McpCommand::List(args)) => mcp::list(&args),
        Command::Mcp(McpCommand::Serve(args)) => mcp_serve::mcp_serve(args).await,
    }
}

/// Logs go to stderr, filtered by `MECATED_LOG` (default `warn`; `info` for `serve`).
fn init_logging(default_filter: &str) {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}
