//! `mecated skills list` and `mecated skills promote`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::process::ExitCode;

use adapter_skillfs::{HostEnv, PromoteRequest, load_skills, promote};
use serde_json::json;

use crate::cli::{PromoteArgs, SkillsListArgs};
use crate::out;
use crate::to_config::common_config;
use crate::usage::UsageError;

/// Resolves the skills as a build would (tiers, trust gate) and lists them with their
/// diagnostics; `--json` prints `{"skills":[…],"diagnostics":[…]}`.
pub(crate) fn list(args: &SkillsListArgs) -> ExitCode {
    let cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let host = match HostEnv::from_process() {
        Ok(host) => host,
        Err(error) => {
            out::stderr(&format!("error: the current directory cannot be read: {error}"));
            return ExitCode::FAILURE;
        }
    };
    let load = load_skills(
        &cfg.skills_options(&cfg.workspace),
        &host,
        cfg.skill_source_config(),
    );
    let metas = load
        .source
        .as_ref()
        .map(|s| s.metas().to_vec())
        .unwrap_or_default();
    if args.json {
        let skills: Vec<_> = metas
            .iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "description": m.description,
                    "origin": m.origin,
                    "has_assets": m.has_assets,
                })
            })
            .collect();
        let object = json!({"skills": skills, "diagnostics": load.diagnostics});
        out::stdout(&serde_json::to_string_pretty(&object).unwrap_or_default());
    } else if metas.is_empty() {
        out::stderr("no skills found (give --skills-dir DIR or --skills-conventional)");
    } else {
        let width = metas.iter().map(|m| m.name.len()).max().unwrap_or(0);
        for meta in &metas {
            out::stdout(&format!(
                "{:<width$}  {:<8}  {}",
                meta.name,
                meta.origin.as_str(),
                out::first_line(&meta.description)
            ));
        }
    }
    ExitCode::SUCCESS
}

/// Promotes one draft from `--skills-draft-dir` into the one `--skills-dir`, after a
/// confirmation on the terminal (or `--yes`). Exit 0 on success, 1 on a refusal.
pub(crate) fn promote_draft(args: &PromoteArgs) -> ExitCode {
    let cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let Some(quarantine) = cfg.skills.draft_dir.clone() else {
        return UsageError::new(
            "skills promote needs --skills-draft-dir DIR (the quarantine holding the draft)",
        )
        .exit();
    };
    let active_dir = match cfg.skills.dirs.as_slice() {
        [one] => one.clone(),
        [] => {
            return UsageError::new(
                "skills promote needs exactly one --skills-dir DIR (where the skill goes)",
            )
            .exit();
        }
        many => {
            let given: Vec<String> = many.iter().map(|d| d.display().to_string()).collect();
            return UsageError::value(
                "--skills-dir",
                given.join(", "),
                "skills promote takes exactly one --skills-dir",
            )
            .exit();
        }
    };
    let request = PromoteRequest {
        quarantine,
        active_dir,
        name: args.name.clone(),
    };
    let yes = args.yes;
    let outcome = promote(&request, |summary| {
        if yes {
            return true;
        }
        if !std::io::stdin().is_terminal() {
            out::stderr("no terminal to confirm on: pass --yes to promote without asking");
            return false;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "Promote skill {:?}?\n  {}\n[y/N] ",
            summary.name, summary.description
        );
        let _ = err.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
    });
    match outcome {
        Ok(promoted) => {
            out::stdout(&format!(
                "promoted skill {} to {} (active from the next start)",
                promoted.name,
                promoted.destination.display()
            ));
            ExitCode::SUCCESS
        }
        Err(error) => out::failure(error),
    }
}
