//! `--mcp-config FILE`: the `mcpServers` JSON that Claude Code, Cursor and VS Code
//! users already keep in `.mcp.json`.
//!
//! ```json
//! {"mcpServers": {
//!   "files":  {"command": "npx-free-program", "args": ["--root", "${HOME}/src"], "env": {"K": "v"}},
//!   "issues": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//! }}
//! ```
//!
//! Pure: the text, the file name (for errors) and an environment lookup in, server
//! configs out. `${VAR}` (and `${VAR:-default}`) expand in `command`, `args`, `env`,
//! `url` and `headers`; an unset variable without a default is an error naming it.
//! Every error names the file, the JSON path and what is expected; a bad file yields
//! no server at all.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::client_servers::{http_headers, name_problem};
use crate::config::ServerConfig;
use crate::tool::json_type as kind;
use crate::url_check::{check_http_shape, validate_url};

/// Largest config file read (1 MiB).
pub const MAX_MCP_CONFIG_BYTES: u64 = 1024 * 1024;

/// A config file that cannot be used: which file, where in it, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {path}: {problem}", file.display())]
pub struct McpConfigError {
    /// The file.
    pub file: PathBuf,
    /// The JSON path of the problem (`$.mcpServers.files.args[1]`).
    pub path: String,
    /// What is wrong and what is expected.
    pub problem: String,
}

struct Ctx<'a, E> {
    file: &'a Path,
    env: &'a E,
}

impl<E: Fn(&str) -> Option<String>> Ctx<'_, E> {
    fn error(&self, path: &str, problem: impl Into<String>) -> McpConfigError {
        McpConfigError {
            file: self.file.to_path_buf(),
            path: path.to_owned(),
            problem: problem.into(),
        }
    }

    fn string(&self, value: &Value, path: &str) -> Result<String, McpConfigError> {
        match value {
            Value::String(text) => self.expand(text, path),
            other => Err(self.error(path, format!("expected a string, found {}", kind(other)))),
        }
    }

    /// `${VAR}` and `${VAR:-default}` expanded; `$` elsewhere is literal.
    fn expand(&self, text: &str, path: &str) -> Result<String, McpConfigError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                return Err(self.error(
                    path,
                    "\"${\" without a closing \"}\"; write ${NAME} or ${NAME:-default}",
                ));
            };
            let inner = &after[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(self.error(
                    path,
                    format!("${{{inner}}} does not name a variable ([A-Za-z0-9_]+)"),
                ));
            }
            match ((self.env)(name), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    return Err(self.error(
                        path,
                        format!("the environment variable {name} is not set (write ${{{name}:-default}} for a default)"),
                    ));
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// Parses one `mcpServers` file into server configs, in the file's order. Stdio
/// servers run in `workspace`.
///
/// # Errors
/// [`McpConfigError`] naming the file, the JSON path and what is expected: not JSON,
/// no `mcpServers` object, a bad name, an unknown or `sse` transport, a missing or
/// mistyped field, an unset variable, a bad URL or header, or a URL that would carry
/// headers (credentials) over plain http to a non-loopback host.
pub fn parse_mcp_config(
    text: &str,
    file: &Path,
    workspace: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, McpConfigError> {
    let ctx = Ctx { file, env: &env };
    let root: Value = serde_json::from_str(text).map_err(|e| {
        ctx.error(
            "$",
            format!("not valid JSON ({e}); expected {{\"mcpServers\": {{…}}}}"),
        )
    })?;
    let Value::Object(root) = root else {
        return Err(ctx.error("$", format!("expected an object, found {}", kind(&root))));
    };
    let servers = match root.get("mcpServers") {
        Some(Value::Object(servers)) => servers,
        Some(other) => {
            return Err(ctx.error(
                "$.mcpServers",
                format!("expected an object of servers, found {}", kind(other)),
            ));
        }
        None => return Err(ctx.error("$", "no \"mcpServers\" object")),
    };
    let mut configs = Vec::with_capacity(servers.len());
    for (name, entry) in servers {
        let path = format!("$.mcpServers.{name}");
        if let Some(problem) = name_problem(name) {
            return Err(ctx.error(&path, problem));
        }
        let Value::Object(entry) = entry else {
            return Err(ctx.error(&path, format!("expected an object, found {}", kind(entry))));
        };
        let entry = Entry {
            ctx: &ctx,
            name,
            fields: entry,
            path: &path,
        };
        configs.push(entry.server(workspace)?);
    }
    Ok(configs)
}

/// One entry of `mcpServers`, and its JSON path for the errors.
struct Entry<'a, E> {
    ctx: &'a Ctx<'a, E>,
    name: &'a str,
    fields: &'a Map<String, Value>,
    /// `$.mcpServers.<name>`.
    path: &'a str,
}

impl<E: Fn(&str) -> Option<String>> Entry<'_, E> {
    /// The JSON path of the entry's `field`.
    fn at(&self, field: &str) -> String {
        format!("{}.{field}", self.path)
    }

    fn server(&self, workspace: &Path) -> Result<ServerConfig, McpConfigError> {
        let ctx = self.ctx;
        let transport = match self.fields.get("type") {
            None if self.fields.contains_key("command") => "stdio".to_owned(),
            None if self.fields.contains_key("url") => "http".to_owned(),
            None => {
                return Err(ctx.error(
                    self.path,
                    "neither \"command\" (a stdio server) nor \"url\" (a streamable HTTP server)",
                ));
            }
            Some(Value::String(t)) => t.clone(),
            Some(other) => {
                return Err(ctx.error(
                    &self.at("type"),
                    format!("expected a string, found {}", kind(other)),
                ));
            }
        };
        match transport.as_str() {
            "stdio" => self.stdio(workspace),
            "http" | "streamable-http" | "streamableHttp" => self.http(),
            "sse" => Err(ctx.error(
                &self.at("type"),
                "the SSE transport is deprecated and not supported; use a streamable HTTP endpoint (\"type\": \"http\")",
            )),
            other => Err(ctx.error(
                &self.at("type"),
                format!("unknown transport {other:?}; expected \"stdio\" or \"http\""),
            )),
        }
    }

    fn stdio(&self, workspace: &Path) -> Result<ServerConfig, McpConfigError> {
        let ctx = self.ctx;
        let command_path = self.at("command");
        let command = match self.fields.get("command") {
            Some(value) => ctx.string(value, &command_path)?,
            None => return Err(ctx.error(&command_path, "missing; a stdio server needs the program to run")),
        };
        if command.is_empty() {
            return Err(ctx.error(&command_path, "empty; a stdio server needs the program to run"));
        }
        let mut args = Vec::new();
        match self.fields.get("args") {
            None => {}
            Some(Value::Array(values)) => {
                for (i, value) in values.iter().enumerate() {
                    args.push(ctx.string(value, &format!("{}.args[{i}]", self.path))?);
                }
            }
            Some(other) => {
                return Err(ctx.error(
                    &self.at("args"),
                    format!("expected an array of strings, found {}", kind(other)),
                ));
            }
        }
        let env = self.string_pairs("env", |key| {
            (key.is_empty() || key.contains('=') || key.contains('\0'))
                .then_some("not a valid environment variable name")
        })?;
        let mut config = ServerConfig::stdio(self.name, command, args, workspace);
        if let crate::config::TransportConfig::Stdio { env: child_env, .. } = &mut config.transport {
            *child_env = env;
        }
        Ok(config)
    }

    fn http(&self) -> Result<ServerConfig, McpConfigError> {
        let ctx = self.ctx;
        let url_path = self.at("url");
        let url = match self.fields.get("url") {
            Some(value) => ctx.string(value, &url_path)?,
            None => return Err(ctx.error(&url_path, "missing; a streamable HTTP server needs its URL")),
        };
        if let Err(e) = check_http_shape(&url) {
            return Err(ctx.error(
                &url_path,
                format!("expected an absolute http:// or https:// URL with a host: {e}"),
            ));
        }
        let pairs = self.string_pairs("headers", |_| None)?;
        let mut problems = Vec::new();
        let headers = http_headers(&pairs, &mut problems);
        if let Some(problem) = problems.into_iter().next() {
            return Err(ctx.error(&self.at("headers"), problem));
        }
        if headers.is_some()
            && let Err(reason) = validate_url(&url)
        {
            return Err(ctx.error(
                &url_path,
                format!(
                    "headers (credentials) are configured, so the URL must be https or loopback http ({reason})"
                ),
            ));
        }
        Ok(ServerConfig::http(self.name, url, headers))
    }

    /// The object of strings at `field` as pairs, in the file's order (none when the
    /// field is absent); `key_problem` refuses a key, before its value is read.
    fn string_pairs(
        &self,
        field: &str,
        key_problem: impl Fn(&str) -> Option<&'static str>,
    ) -> Result<Vec<(String, String)>, McpConfigError> {
        let ctx = self.ctx;
        let mut pairs = Vec::new();
        match self.fields.get(field) {
            None => {}
            Some(Value::Object(values)) => {
                for (key, value) in values {
                    let value_path = format!("{}.{field}.{key}", self.path);
                    if let Some(problem) = key_problem(key) {
                        return Err(ctx.error(&value_path, problem));
                    }
                    pairs.push((key.clone(), ctx.string(value, &value_path)?));
                }
            }
            Some(other) => {
                return Err(ctx.error(
                    &self.at(field),
                    format!("expected an object of strings, found {}", kind(other)),
                ));
            }
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TransportConfig;

    fn parse(text: &str) -> Result<Vec<ServerConfig>, McpConfigError> {
        parse_mcp_config(text, Path::new("cfg.json"), Path::new("/ws"), |name| match name {
            "TOKEN" => Some("s3cr3t".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        })
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn stdio_and_http_entries_map_in_file_order_with_variables_expanded() {
        let configs = parse(
            r#"{"mcpServers": {
                "files": {"command": "fs-server", "args": ["--root", "${HOME}/src", "$HOME"], "env": {"K": "${MISSING:-dflt}"}},
                "issues": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "plain": {"url": "http://127.0.0.1:9/mcp"}
            }}"#,
        )
        .unwrap();
        let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["files", "issues", "plain"]);
        match &configs[0].transport {
            TransportConfig::Stdio {
                program,
                args,
                cwd,
                env,
            } => {
                assert_eq!(program, "fs-server");
                assert_eq!(args, &["--root", "/home/u/src", "$HOME"]);
                assert_eq!(cwd, Path::new("/ws"));
                assert_eq!(env, &[("K".to_owned(), "dflt".to_owned())]);
            }
            TransportConfig::Http { .. } => panic!("stdio expected"),
        }
        match &configs[1].transport {
            TransportConfig::Http { url, headers, .. } => {
                assert_eq!(url, "https://mcp.example/mcp");
                assert_eq!(headers.as_ref().unwrap()["authorization"], "Bearer s3cr3t");
            }
            TransportConfig::Stdio { .. } => panic!("http expected"),
        }
        assert!(matches!(
            &configs[2].transport,
            TransportConfig::Http { headers: None, .. }
        ));
    }

    #[test]
    fn every_error_names_the_file_the_json_path_and_what_is_expected() {
        for (text, path, needle) in [
            ("{", "$", "not valid JSON"),
            ("[]", "$", "expected an object"),
            ("{}", "$", "no \"mcpServers\""),
            (
                r#"{"mcpServers": []}"#,
                "$.mcpServers",
                "expected an object of servers",
            ),
            (
                r#"{"mcpServers": {"a__b": {"command": "x"}}}"#,
                "$.mcpServers.a__b",
                "\"__\"",
            ),
            (
                r#"{"mcpServers": {"a b": {"command": "x"}}}"#,
                "$.mcpServers.a b",
                "[A-Za-z0-9._-]",
            ),
            (
                r#"{"mcpServers": {"s": 3}}"#,
                "$.mcpServers.s",
                "expected an object",
            ),
            (r#"{"mcpServers": {"s": {}}}"#, "$.mcpServers.s", "neither"),
            (
                r#"{"mcpServers": {"s": {"type": "sse", "url": "https://x/sse"}}}"#,
                "$.mcpServers.s.type",
                "SSE",
            ),
            (
                r#"{"mcpServers": {"s": {"type": "ws", "url": "https://x"}}}"#,
                "$.mcpServers.s.type",
                "unknown transport",
            ),
            (
                r#"{"mcpServers": {"s": {"command": 7}}}"#,
                "$.mcpServers.s.command",
                "expected a string",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "x", "args": "a"}}}"#,
                "$.mcpServers.s.args",
                "array",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "x", "args": ["a", 1]}}}"#,
                "$.mcpServers.s.args[1]",
                "expected a string",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "${NOPE}"}}}"#,
                "$.mcpServers.s.command",
                "NOPE is not set",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "${NOPE"}}}"#,
                "$.mcpServers.s.command",
                "closing",
            ),
            (
                r#"{"mcpServers": {"s": {"type": "http"}}}"#,
                "$.mcpServers.s.url",
                "missing",
            ),
            (
                r#"{"mcpServers": {"s": {"url": "/relative"}}}"#,
                "$.mcpServers.s.url",
                "absolute",
            ),
            (
                r#"{"mcpServers": {"s": {"url": "http://mcp.example/mcp", "headers": {"Authorization": "Bearer x"}}}}"#,
                "$.mcpServers.s.url",
                "https or loopback",
            ),
            (
                r#"{"mcpServers": {"s": {"url": "https://x/mcp", "headers": {"Mcp-Session-Id": "x"}}}}"#,
                "$.mcpServers.s.headers",
                "reserved",
            ),
        ] {
            let message = error(text);
            assert!(
                message.starts_with(&format!("cfg.json: {path}: ")),
                "{text} → {message}"
            );
            assert!(message.contains(needle), "{text} → {message}");
        }
    }

    #[test]
    fn an_http_server_without_headers_may_use_plain_http_anywhere() {
        let configs = parse(r#"{"mcpServers": {"s": {"url": "http://mcp.example/mcp"}}}"#).unwrap();
        assert_eq!(configs.len(), 1);
    }
}
