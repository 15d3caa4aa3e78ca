//! The container image and the Kubernetes example as data: the rules a `Dockerfile`
//! and a manifest must keep (a non-root user, a health check, probes on paths the
//! HTTP router serves, every Secret key the Deployment reads defined), as plain
//! functions so a test can also show each rule failing.

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

/// What is wrong with a `Dockerfile`: fewer than two stages, no `USER` in the last
/// stage or a root one, no `HEALTHCHECK CMD`.
pub fn dockerfile_problems(text: &str) -> Vec<String> {
    let instructions: Vec<(String, String)> = joined_lines(text)
        .iter()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            Some((word.to_ascii_uppercase(), rest.trim().to_owned()))
        })
        .collect();
    let mut problems = Vec::new();
    let stages = instructions.iter().filter(|(word, _)| word == "FROM").count();
    if stages < 2 {
        problems.push(format!(
            "expected a multi-stage build (2 or more FROM), found {stages}"
        ));
    }
    let last_stage = instructions
        .iter()
        .rposition(|(word, _)| word == "FROM")
        .map_or(&instructions[..], |at| &instructions[at..]);
    match last_stage.iter().rev().find(|(word, _)| word == "USER") {
        None => problems.push("the runtime stage sets no USER: it would run as root".to_owned()),
        Some((_, user)) => {
            let name = user.split(':').next().unwrap_or_default();
            if name == "root" || name == "0" {
                problems.push(format!("the runtime stage runs as {user:?}: use a non-root user"));
            }
        }
    }
    if !last_stage
        .iter()
        .any(|(word, rest)| word == "HEALTHCHECK" && rest.contains("CMD"))
    {
        problems.push("the runtime stage has no HEALTHCHECK CMD".to_owned());
    }
    problems
}

/// Lines with their `\` continuations joined.
fn joined_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                lines.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// The paths routed in `source` (an axum router: `.route("/path", …)`).
pub fn routed_paths(source: &str) -> BTreeSet<String> {
    source
        .split(".route(\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(path, _)| path.to_owned()))
        .collect()
}

/// What is wrong with a Kubernetes manifest (several documents): each Deployment
/// needs at least two replicas, a readiness probe on `/readyz` and a liveness probe
/// on `/healthz` (both in `routes`), a non-root security context, and every
/// `secretKeyRef` must name a key of a Secret defined in the manifest.
pub fn kubernetes_problems(text: &str, routes: &BTreeSet<String>) -> Vec<String> {
    let documents = match YamlLoader::load_from_str(text) {
        Ok(documents) => documents,
        Err(error) => return vec![format!("the manifest does not parse: {error}")],
    };
    let mut secrets: BTreeSet<(String, String)> = BTreeSet::new();
    for doc in documents
        .iter()
        .filter(|doc| doc["kind"].as_str() == Some("Secret"))
    {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        for section in ["data", "stringData"] {
            if let Some(map) = doc[section].as_hash() {
                for key in map.keys().filter_map(Yaml::as_str) {
                    secrets.insert((name.to_owned(), key.to_owned()));
                }
            }
        }
    }
    let mut problems = Vec::new();
    let deployments: Vec<&Yaml> = documents
        .iter()
        .filter(|doc| doc["kind"].as_str() == Some("Deployment"))
        .collect();
    if deployments.is_empty() {
        problems.push("no Deployment in the manifest".to_owned());
    }
    if !documents
        .iter()
        .any(|doc| doc["kind"].as_str() == Some("Service"))
    {
        problems.push("no Service in the manifest".to_owned());
    }
    for deployment in deployments {
        let name = deployment["metadata"]["name"].as_str().unwrap_or("?");
        if deployment["spec"]["replicas"].as_i64().unwrap_or(1) < 2 {
            problems.push(format!("Deployment {name}: expected at least 2 replicas"));
        }
        let pod = &deployment["spec"]["template"]["spec"];
        if pod["securityContext"]["runAsNonRoot"].as_bool() != Some(true) {
            problems.push(format!(
                "Deployment {name}: securityContext.runAsNonRoot is not true"
            ));
        }
        let containers = pod["containers"].as_vec().map(Vec::as_slice).unwrap_or_default();
        if containers.is_empty() {
            problems.push(format!("Deployment {name}: no container"));
        }
        for container in containers {
            let container_name = container["name"].as_str().unwrap_or("?");
            for (probe, expected) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
                let path = container[probe]["httpGet"]["path"].as_str();
                match path {
                    Some(path) if path == expected && routes.contains(path) => {}
                    Some(path) if !routes.contains(path) => problems.push(format!(
                        "{container_name}: {probe} path {path:?} is not routed by the server"
                    )),
                    other => problems.push(format!(
                        "{container_name}: {probe} should GET {expected:?}, found {other:?}"
                    )),
                }
            }
            let env = container["env"].as_vec().map(Vec::as_slice).unwrap_or_default();
            for variable in env {
                let reference = &variable["valueFrom"]["secretKeyRef"];
                if reference.is_badvalue() {
                    continue;
                }
                let secret = reference["name"].as_str().unwrap_or_default().to_owned();
                let key = reference["key"].as_str().unwrap_or_default().to_owned();
                if !secrets.contains(&(secret.clone(), key.clone())) {
                    problems.push(format!(
                        "{container_name}: env {} reads key {key:?} of Secret {secret:?}, which the manifest does not define",
                        variable["name"].as_str().unwrap_or("?")
                    ));
                }
            }
        }
    }
    problems
}
