//! The `--mcp-server`, `--mcp-server-insecure-http` and `--mcp-stdio` rules as pure
//! functions over flag values and an injected environment lookup ([`parse_mcp_flags`]).

use std::collections::HashMap;
use std::path::PathBuf;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use crate::config::ServerConfig;
use crate::server_name::ServerName;
use crate::url_check::{check_http_shape, is_loopback_url, validate_url};

/// Help text of `--mcp-server NAME=URL`.
pub const MCP_SERVER_HELP: &str = "Mount the tools of a streamable-HTTP MCP server as mcp__NAME__<tool> \
(repeatable). NAME matches [A-Za-z0-9_]+ without \"__\"; a bearer token is read from MCP_<NAME>_TOKEN, \
and a token-bearing URL must be https or loopback http.";

/// Help text of `--mcp-server-insecure-http NAME`.
pub const MCP_SERVER_INSECURE_HTTP_HELP: &str = "Allow the token-bearing --mcp-server NAME to use plain \
http to a non-loopback host (repeatable). The bearer token from MCP_<NAME>_TOKEN then travels in \
cleartext over the network, readable by anyone on the path; use only on a network you trust.";

/// Help text of `--mcp-stdio NAME=COMMAND`.
pub const MCP_STDIO_HELP: &str = "Mount the tools of an MCP server started as a child process \
(repeatable). COMMAND is split into words like a POSIX shell would, without expanding variables, \
globs or ~, and never run through a shell; the child runs in the workspace without the harness's \
credentials (pass a secret through the command, e.g. `env KEY=value prog`).";

/// The flag `--mcp-server`.
pub(crate) const FLAG_MCP_SERVER: &str = "--mcp-server";
/// The flag `--mcp-server-insecure-http`.
pub(crate) const FLAG_MCP_SERVER_INSECURE_HTTP: &str = "--mcp-server-insecure-http";
/// The flag `--mcp-stdio`.
pub(crate) const FLAG_MCP_STDIO: &str = "--mcp-stdio";

/// The raw values of the MCP flags, each list in argv order.
#[derive(Clone, Debug, Default)]
pub struct McpFlags {
    /// `--mcp-server NAME=URL` values.
    pub servers: Vec<String>,
    /// `--mcp-server-insecure-http NAME` values.
    pub insecure_http: Vec<String>,
    /// `--mcp-stdio NAME=COMMAND` values.
    pub stdio: Vec<String>,
    /// `--workspace`: the working directory of stdio children.
    pub workspace: PathBuf,
}

/// A flag value that breaks a rule: a startup error naming the flag and the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {flag} {value:?}: {reason}")]
pub struct FlagError {
    /// The flag.
    pub flag: &'static str,
    /// The offending value as given.
    pub value: String,
    /// What is wrong and what to do.
    pub reason: String,
}

fn error(flag: &'static str, value: &str, reason: impl Into<String>) -> FlagError {
    FlagError {
        flag,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

/// The environment variable holding the bearer token of `--mcp-server NAME`.
pub(crate) fn token_variable(name: &str) -> String {
    format!("MCP_{}_TOKEN", name.to_ascii_uppercase())
}

/// Parses the MCP flags into server configs: `--mcp-server` entries in flag order,
/// then `--mcp-stdio` entries in flag order.
///
/// Tokens are read once, from `env` (`MCP_<NAME>_TOKEN`): a non-empty value sets
/// exactly `Authorization: Bearer <token>`; unset or empty means no headers. Argv
/// order between the flags never matters: the relaxation and https rules run after
/// all values are parsed. Parsing reads no other environment and makes no DNS query.
///
/// # Errors
/// The first [`FlagError`]; it names the flag and the value (never a token).
pub fn parse_mcp_flags(
    flags: &McpFlags,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, FlagError> {
    let mut names = NameSet::default();
    let mut http = Vec::new();
    for value in &flags.servers {
        let (name, url) = split_pair(FLAG_MCP_SERVER, value, "NAME=URL")?;
        check_name(FLAG_MCP_SERVER, value, name)?;
        let parsed = check_http_shape(url).map_err(|e| {
            error(
                FLAG_MCP_SERVER,
                value,
                format!("the URL of NAME=URL must be an absolute http:// or https:// URL with a host: {e}"),
            )
        })?;
        names.insert(FLAG_MCP_SERVER, value, name)?;
        http.push((value.as_str(), name, url, parsed));
    }
    let mut stdio = Vec::new();
    for value in &flags.stdio {
        let (name, command) = split_pair(FLAG_MCP_STDIO, value, "NAME=COMMAND")?;
        check_name(FLAG_MCP_STDIO, value, name)?;
        let words = shell_words::split(command).map_err(|e| {
            error(
                FLAG_MCP_STDIO,
                value,
                format!("COMMAND of NAME=COMMAND does not split into words ({e}); balance its quotes"),
            )
        })?;
        let Some((program, args)) = words.split_first() else {
            return Err(error(
                FLAG_MCP_STDIO,
                value,
                "COMMAND of NAME=COMMAND has no words",
            ));
        };
        names.insert(FLAG_MCP_STDIO, value, name)?;
        stdio.push(ServerConfig::stdio(
            name,
            program.clone(),
            args.to_vec(),
            flags.workspace.clone(),
        ));
    }

    let mut relaxed: HashMap<String, &str> = HashMap::new();
    for value in &flags.insecure_http {
        let name = value.as_str();
        check_name(FLAG_MCP_SERVER_INSECURE_HTTP, value, name)?;
        let key = name.to_ascii_uppercase();
        if let Some(first) = relaxed.get(&key) {
            return Err(error(
                FLAG_MCP_SERVER_INSECURE_HTTP,
                value,
                format!("duplicate: {first:?} is already relaxed (names are case-insensitive)"),
            ));
        }
        let Some((_, server, url, parsed)) = http.iter().find(|(_, n, _, _)| n.eq_ignore_ascii_case(name))
        else {
            return Err(error(
                FLAG_MCP_SERVER_INSECURE_HTTP,
                value,
                format!(
                    "no {FLAG_MCP_SERVER} registers a server named {name:?}; {FLAG_MCP_STDIO} servers use no URL"
                ),
            ));
        };
        if parsed.scheme() != "http" || is_loopback_url(parsed) {
            return Err(error(
                FLAG_MCP_SERVER_INSECURE_HTTP,
                value,
                format!(
                    "server {server:?} has URL {url:?}; the relaxation covers only plain http to a non-loopback host, so remove it"
                ),
            ));
        }
        relaxed.insert(key, name);
    }

    let mut configs = Vec::with_capacity(http.len() + stdio.len());
    for (value, name, url, _) in http {
        let variable = token_variable(name);
        let token = env(&variable).filter(|t| !t.is_empty());
        let headers = match token {
            None => None,
            Some(token) => {
                let header = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                    error(
                        FLAG_MCP_SERVER,
                        value,
                        format!("{variable} is not a valid HTTP header value (control characters such as CR, LF or NUL)"),
                    )
                })?;
                if !relaxed.contains_key(&name.to_ascii_uppercase())
                    && let Err(reason) = validate_url(url)
                {
                    return Err(error(
                        FLAG_MCP_SERVER,
                        value,
                        format!(
                            "server {name:?} at {url:?} gets the bearer token from {variable}, so its URL must be https or loopback http ({reason}); \
                             {FLAG_MCP_SERVER_INSECURE_HTTP} {name} is the explicit opt-out"
                        ),
                    ));
                }
                let mut map = HeaderMap::new();
                map.insert(AUTHORIZATION, header);
                Some(map)
            }
        };
        configs.push(ServerConfig::http(name, url, headers));
    }
    configs.extend(stdio);
    Ok(configs)
}

fn split_pair<'a>(flag: &'static str, value: &'a str, form: &str) -> Result<(&'a str, &'a str), FlagError> {
    match value.split_once('=') {
        Some((name, rest)) if !name.is_empty() && !rest.is_empty() => Ok((name, rest)),
        _ => Err(error(
            flag,
            value,
            format!("expected {form} with a non-empty NAME and {}", &form[5..]),
        )),
    }
}

fn check_name(flag: &'static str, value: &str, name: &str) -> Result<(), FlagError> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(error(
            flag,
            value,
            format!("the name {name:?} must match [A-Za-z0-9_]+ (it derives the variable MCP_<NAME>_TOKEN)"),
        ));
    }
    ServerName::check(name).map_err(|problem| error(flag, value, format!("the name {name:?}: {problem}")))
}

/// Names of `--mcp-server` and `--mcp-stdio`, unique case-insensitively.
#[derive(Default)]
struct NameSet {
    by_upper: HashMap<String, String>,
}

impl NameSet {
    fn insert(&mut self, flag: &'static str, value: &str, name: &str) -> Result<(), FlagError> {
        let upper = name.to_ascii_uppercase();
        if let Some(first) = self.by_upper.get(&upper) {
            return Err(error(
                flag,
                value,
                format!(
                    "the name {name:?} collides with {first:?}: server names are case-insensitive because both would read {}",
                    token_variable(name)
                ),
            ));
        }
        self.by_upper.insert(upper, name.to_owned());
        Ok(())
    }
}
