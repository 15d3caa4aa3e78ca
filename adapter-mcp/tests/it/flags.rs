//! The `--mcp-*` flag rules and the URL check.

use std::collections::HashMap;

use adapter_mcp::{
    FlagError, MCP_SERVER_INSECURE_HTTP_HELP, McpFlags, ServerConfig, TransportConfig, parse_mcp_flags,
};

fn flags(servers: &[&str], insecure: &[&str], stdio: &[&str]) -> McpFlags {
    McpFlags {
        servers: servers.iter().map(|s| (*s).to_owned()).collect(),
        insecure_http: insecure.iter().map(|s| (*s).to_owned()).collect(),
        stdio: stdio.iter().map(|s| (*s).to_owned()).collect(),
        workspace: "/work/space".into(),
    }
}

fn parse(f: &McpFlags, env: &[(&str, &str)]) -> Result<Vec<ServerConfig>, FlagError> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    parse_mcp_flags(f, |name| env.get(name).cloned())
}

fn http(config: &ServerConfig) -> (&str, Option<String>) {
    match &config.transport {
        TransportConfig::Http { url, headers, .. } => (
            url.as_str(),
            headers
                .as_ref()
                .map(|h| h.get("authorization").unwrap().to_str().unwrap().to_owned()),
        ),
        other => panic!("not http: {other:?}"),
    }
}

#[test]
fn url_is_kept_exactly_and_no_env_means_no_headers() {
    let configs = parse(
        &flags(&["tequitl=http://127.0.0.1:9100/mcp?tenant=a=b"], &[], &[]),
        &[],
    )
    .unwrap();
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0].name, "tequitl");
    let TransportConfig::Http { url, headers, .. } = &configs[0].transport else {
        panic!()
    };
    assert_eq!(url, "http://127.0.0.1:9100/mcp?tenant=a=b");
    assert!(headers.is_none());
}

#[test]
fn servers_keep_flag_order() {
    let configs = parse(
        &flags(
            &[
                "vmcp=https://vmcp.internal/mcp",
                "tequitl=https://tequitl.internal/mcp",
            ],
            &[],
            &[],
        ),
        &[],
    )
    .unwrap();
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["vmcp", "tequitl"]);
}

#[test]
fn malformed_values_mention_the_form() {
    for value in ["", "noequals", "=http://x", "name=", "="] {
        let error = parse(&flags(&[value], &[], &[]), &[]).unwrap_err().to_string();
        assert!(error.contains("NAME=URL"), "{value:?}: {error}");
        assert!(error.contains("--mcp-server"), "{error}");
    }
}

#[test]
fn names_follow_the_grammar() {
    for name in ["my-svc", "my svc", "svc.1", "ıvmcp", "a/b"] {
        let value = format!("{name}=https://x.internal/mcp");
        let error = parse(&flags(&[&value], &[], &[]), &[]).unwrap_err().to_string();
        assert!(error.contains("A-Za-z0-9_"), "{name:?}: {error}");
        assert!(error.contains("MCP_<NAME>_TOKEN"), "{error}");
    }
    assert!(parse(&flags(&["task_graph2=https://x.internal/mcp"], &[], &[]), &[]).is_ok());
    let error = parse(&flags(&["a__b=https://x.internal/mcp"], &[], &[]), &[])
        .unwrap_err()
        .to_string();
    assert!(error.contains("__"), "{error}");
}

#[test]
fn names_are_unique_case_insensitively() {
    for second in ["VMCP=https://b.internal/mcp", "vMcp=https://b.internal/mcp"] {
        let error = parse(&flags(&["vmcp=https://a.internal/mcp", second], &[], &[]), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("MCP_VMCP_TOKEN"), "{error}");
        assert!(error.contains("\"vmcp\""), "{error}");
    }
    assert!(
        parse(
            &flags(
                &["vmcp=https://a.internal/mcp", "tequitl=https://b.internal/mcp"],
                &[],
                &[]
            ),
            &[]
        )
        .is_ok()
    );
}

#[test]
fn tokens_become_one_bearer_header() {
    let f = flags(
        &[
            "tequitl=https://tequitl.internal/mcp",
            "vmcp=https://vmcp.internal/mcp",
        ],
        &[],
        &[],
    );
    let configs = parse(&f, &[("MCP_TEQUITL_TOKEN", "s3cr3t")]).unwrap();
    assert_eq!(http(&configs[0]).1.as_deref(), Some("Bearer s3cr3t"));
    assert_eq!(http(&configs[1]).1, None);
    let TransportConfig::Http { headers, .. } = &configs[0].transport else {
        panic!()
    };
    assert_eq!(headers.as_ref().unwrap().len(), 1);
    let configs = parse(&f, &[("MCP_TEQUITL_TOKEN", "s3cr3t"), ("MCP_VMCP_TOKEN", "")]).unwrap();
    assert_eq!(http(&configs[1]).1, None);
    let bad = parse(&f, &[("MCP_TEQUITL_TOKEN", "a\nb")])
        .unwrap_err()
        .to_string();
    assert!(
        bad.contains("MCP_TEQUITL_TOKEN") && !bad.contains("a\nb"),
        "{bad}"
    );
}

#[test]
fn a_token_needs_https_or_the_explicit_opt_out() {
    let f = flags(&["vmcp=http://vmcp.internal/mcp"], &[], &[]);
    let error = parse(&f, &[("MCP_VMCP_TOKEN", "t")]).unwrap_err().to_string();
    assert!(
        error.contains("https") && error.contains("--mcp-server-insecure-http"),
        "{error}"
    );
    assert!(!error.contains("\"t\""), "{error}");
    let configs = parse(&f, &[]).unwrap();
    assert_eq!(http(&configs[0]).1, None);
}

#[test]
fn loopback_http_takes_a_token() {
    for url in [
        "http://127.0.0.1:9100/mcp",
        "http://localhost:9100/mcp",
        "http://[::1]:9100/mcp",
    ] {
        let value = format!("vmcp={url}");
        let configs = parse(&flags(&[&value], &[], &[]), &[("MCP_VMCP_TOKEN", "t")]).unwrap();
        assert_eq!(http(&configs[0]), (url, Some("Bearer t".to_owned())));
    }
}

#[test]
fn relaxation_works_in_any_argv_order_and_case() {
    for relax in ["tequitl", "TEQUITL"] {
        let f = flags(&["tequitl=http://tequitl.internal/mcp"], &[relax], &[]);
        let configs = parse(&f, &[("MCP_TEQUITL_TOKEN", "t")]).unwrap();
        assert_eq!(
            http(&configs[0]),
            ("http://tequitl.internal/mcp", Some("Bearer t".to_owned()))
        );
    }
}

#[test]
fn relaxation_covers_only_its_server() {
    let f = flags(
        &[
            "tequitl=http://tequitl.internal/mcp",
            "vmcp=http://vmcp.internal/mcp",
        ],
        &["tequitl"],
        &[],
    );
    let error = parse(&f, &[("MCP_TEQUITL_TOKEN", "t"), ("MCP_VMCP_TOKEN", "u")])
        .unwrap_err()
        .to_string();
    assert!(error.contains("vmcp"), "{error}");
    assert!(!error.contains("tequitl="), "{error}");
}

#[test]
fn relaxation_needs_an_http_server_of_that_name() {
    for stdio in [&[][..], &["ghost=mcp-ghost --serve"][..]] {
        let f = flags(&["vmcp=https://vmcp.internal/mcp"], &["ghost"], stdio);
        let error = parse(&f, &[]).unwrap_err().to_string();
        assert!(
            error.contains("ghost") && error.contains("--mcp-server"),
            "{error}"
        );
    }
}

#[test]
fn relaxation_is_rejected_where_it_does_nothing() {
    for url in [
        "https://tequitl.internal/mcp",
        "http://127.0.0.1:9100/mcp",
        "ftp://tequitl.internal/x",
    ] {
        let value = format!("tequitl={url}");
        let error = parse(
            &flags(&[&value], &["tequitl"], &[]),
            &[("MCP_TEQUITL_TOKEN", "t")],
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("tequitl"), "{url}: {error}");
    }
    for name in ["my-svc", ""] {
        let error = parse(
            &flags(&["tequitl=http://tequitl.internal/mcp"], &[name], &[]),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("A-Za-z0-9_"), "{name:?}: {error}");
    }
    let error = parse(
        &flags(
            &["tequitl=http://tequitl.internal/mcp"],
            &["tequitl", "TEQUITL"],
            &[],
        ),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("duplicate"), "{error}");
}

#[test]
fn relaxation_help_warns_about_cleartext_on_the_network() {
    let help = MCP_SERVER_INSECURE_HTTP_HELP.to_lowercase();
    assert!(help.contains("cleartext") && help.contains("network"), "{help}");
}

#[test]
fn stdio_commands_split_like_a_shell_without_expansion() {
    let configs = parse(&flags(&[], &[], &[r#"fs=mcp-fs --root "/srv/a b" $HOME"#]), &[]).unwrap();
    let TransportConfig::Stdio {
        program, args, cwd, ..
    } = &configs[0].transport
    else {
        panic!()
    };
    assert_eq!(program, "mcp-fs");
    assert_eq!(args, &["--root", "/srv/a b", "$HOME"]);
    assert_eq!(cwd.to_str(), Some("/work/space"));
    for bad in [r#"fs=mcp-fs "open"#, "fs="] {
        let error = parse(&flags(&[], &[], &[bad]), &[]).unwrap_err().to_string();
        assert!(error.contains("--mcp-stdio"), "{bad}: {error}");
    }
    let error = parse(&flags(&["fs=https://fs.internal/mcp"], &[], &["FS=x"]), &[])
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("MCP_FS_TOKEN") && error.contains("\"fs\""),
        "{error}"
    );
    // `|`, `;`, `>` and `&` are literal words.
    let configs = parse(&flags(&[], &[], &["x=prog a|b ; > &"]), &[]).unwrap();
    let TransportConfig::Stdio { args, .. } = &configs[0].transport else {
        panic!()
    };
    assert_eq!(args, &["a|b", ";", ">", "&"]);
}
