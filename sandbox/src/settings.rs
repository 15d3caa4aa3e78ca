//! [`SandboxSettings`]: what the operator asked for, and the one rule turning it and
//! the kernel's [`Support`] into a [`Confinement`] for a session's commands and for a
//! child working on a workspace copy.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine_ports::{Keyword as _, SandboxMode, SandboxStatus};

use crate::policy::SandboxPolicy;
use crate::support::Support;

/// What happens when the sandbox asked for cannot be set up (`--sandbox-fallback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SandboxFallback {
    /// Commands are refused with a message saying why.
    Refuse,
    /// Commands run unconfined (today's behaviour), after one warning.
    Off,
}

engine_ports::keyword_words! {
    SandboxFallback {
        Refuse => "refuse",
        Off => "off",
    }
    parse_error: ParseFallbackError { value }
}

/// A string that is not one of `refuse`, `off`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid sandbox fallback {value:?}: expected one of {}",
    SandboxFallback::expected()
)]
pub struct ParseFallbackError {
    /// The rejected text.
    pub value: String,
}

/// The operator's sandbox settings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxSettings {
    /// The mode asked for (`--sandbox`; default `workspace-write`).
    pub mode: SandboxMode,
    /// Whether the mode was asked for explicitly (an implicit default falls back to
    /// `off` where the kernel cannot confine; an explicit one obeys `fallback`).
    pub explicit: bool,
    /// `--sandbox-fallback`, when given.
    pub fallback: Option<SandboxFallback>,
    /// Whether confined commands may open IP sockets (`--sandbox-network`).
    pub network: bool,
    /// Paths a confined command may not read (`--sandbox-deny-read`), canonical.
    pub deny_read: Vec<PathBuf>,
}

impl Default for SandboxSettings {
    /// The implicit default: `workspace-write`, network on, nothing denied.
    fn default() -> Self {
        Self {
            mode: SandboxMode::WorkspaceWrite,
            explicit: false,
            fallback: None,
            network: true,
            deny_read: Vec::new(),
        }
    }
}

/// How a command is to be run.
#[derive(Clone, Debug)]
pub enum Confinement {
    /// Confined by this policy (the writable roots are given per command).
    Confined(Arc<SandboxPolicy>),
    /// With the harness's rights.
    Unconfined,
    /// Not at all; the text says why and what to change.
    Refused(Arc<str>),
}

impl Confinement {
    /// The status `session.init` and `mecated tools` state for it.
    pub fn status(&self, settings: &SandboxSettings) -> SandboxStatus {
        match self {
            Self::Confined(policy) => SandboxStatus {
                mode: policy.mode(),
                network: policy.network(),
                refused: false,
            },
            Self::Unconfined => SandboxStatus {
                mode: SandboxMode::Off,
                network: true,
                refused: false,
            },
            Self::Refused(_) => SandboxStatus {
                mode: settings.mode,
                network: settings.network,
                refused: true,
            },
        }
    }
}

impl SandboxSettings {
    /// The settings with `mode` asked for explicitly.
    #[must_use]
    pub fn with_mode(mut self, mode: SandboxMode) -> Self {
        self.mode = mode;
        self.explicit = true;
        self
    }

    /// The settings with `--sandbox-fallback`.
    #[must_use]
    pub fn with_fallback(mut self, fallback: SandboxFallback) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// The settings with the network switch.
    #[must_use]
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// The settings with these canonical paths denied for reading.
    #[must_use]
    pub fn with_deny_read(mut self, paths: Vec<PathBuf>) -> Self {
        self.deny_read = paths;
        self
    }

    /// The confinement of a session's own commands, and the one warning to give when
    /// the kernel cannot honour the mode.
    ///
    /// `off` runs unconfined. Where the kernel cannot confine, an implicit default
    /// falls back to unconfined unless `--sandbox-fallback refuse`; an explicit mode
    /// obeys `--sandbox-fallback`, whose default there is `refuse`.
    pub fn for_session(&self, support: &Support) -> (Confinement, Option<String>) {
        self.decide(
            support,
            "Shell commands run",
            "Shell is refused",
            "unconfined commands",
        )
    }

    /// The confinement of a stdio MCP server the operator opted in
    /// (`--mcp-sandbox NAME`): the session's rule, worded for that server.
    pub fn for_mcp_server(&self, name: &str, support: &Support) -> (Confinement, Option<String>) {
        self.decide(
            support,
            &format!("MCP server {name:?} (--mcp-sandbox) runs"),
            &format!("MCP server {name:?} is not started"),
            "it unconfined",
        )
    }

    fn decide(
        &self,
        support: &Support,
        runs: &str,
        refused: &str,
        allow: &str,
    ) -> (Confinement, Option<String>) {
        if self.mode == SandboxMode::Off {
            return (Confinement::Unconfined, None);
        }
        if support.can_confine(self.network) {
            return (Confinement::Confined(self.policy()), None);
        }
        let default = if self.explicit {
            SandboxFallback::Refuse
        } else {
            SandboxFallback::Off
        };
        let missing = self.missing(support);
        match self.fallback.unwrap_or(default) {
            SandboxFallback::Off => (
                Confinement::Unconfined,
                Some(format!(
                    "the sandbox ({}) cannot be set up here ({missing}): {runs} unconfined \
                     (--sandbox-fallback off, or the implicit default)",
                    self.mode
                )),
            ),
            SandboxFallback::Refuse => {
                let reason = format!(
                    "{refused}: --sandbox {} cannot be set up here ({missing}) and \
                     --sandbox-fallback is refuse; run with --sandbox off or --sandbox-fallback off \
                     to allow {allow}",
                    self.mode
                );
                (Confinement::Refused(reason.clone().into()), Some(reason))
            }
        }
    }

    /// The confinement of commands of a child working on a workspace copy (a
    /// `Parallel` branch, a team member): confined to its copy, or refused — never
    /// unconfined (it could write the parent's workspace) unless the operator said
    /// `--sandbox-fallback off`.
    pub fn for_workspace_copy(&self, support: &Support) -> Confinement {
        let allow_unconfined = self.fallback == Some(SandboxFallback::Off);
        if self.mode != SandboxMode::Off && support.can_confine(self.network) {
            return Confinement::Confined(self.policy());
        }
        if allow_unconfined {
            return Confinement::Unconfined;
        }
        let why = if self.mode == SandboxMode::Off {
            "the sandbox is off (--sandbox off)".to_owned()
        } else {
            format!("the sandbox cannot be set up here ({})", self.missing(support))
        };
        Confinement::Refused(
            format!(
                "Shell is refused on a workspace copy: {why}, and an unconfined command could write \
                 outside the copy; pass --sandbox-fallback off to allow it"
            )
            .into(),
        )
    }

    fn policy(&self) -> Arc<SandboxPolicy> {
        Arc::new(SandboxPolicy::new(
            self.mode,
            self.network,
            self.deny_read.clone(),
        ))
    }

    /// What the kernel lacks, in words.
    fn missing(&self, support: &Support) -> &'static str {
        if support.landlock_abi.is_none() {
            "the kernel has no Landlock"
        } else if !self.network && !support.seccomp {
            "the kernel has no seccomp to cut the network"
        } else {
            "unsupported kernel"
        }
    }
}

/// `path` made absolute and canonical for `--sandbox-deny-read` (the path must exist:
/// Landlock rules name existing files). The error names the flag and the path.
pub fn canonical_deny_path(path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path).map_err(|error| {
        format!(
            "--sandbox-deny-read {}: {error} (a path to deny must exist)",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LANDLOCK: Support = Support {
        landlock_abi: Some(7),
        seccomp: true,
    };
    const NONE: Support = Support {
        landlock_abi: None,
        seccomp: false,
    };

    fn kind(confinement: &Confinement) -> &'static str {
        match confinement {
            Confinement::Confined(_) => "confined",
            Confinement::Unconfined => "unconfined",
            Confinement::Refused(_) => "refused",
        }
    }

    #[test]
    fn a_supported_kernel_confines_sessions_and_copies() {
        let settings = SandboxSettings::default();
        assert_eq!(kind(&settings.for_session(&LANDLOCK).0), "confined");
        assert_eq!(kind(&settings.for_workspace_copy(&LANDLOCK)), "confined");
    }

    #[test]
    fn an_implicit_default_falls_back_to_unconfined_with_a_warning_but_copies_refuse() {
        let settings = SandboxSettings::default();
        let (confinement, warning) = settings.for_session(&NONE);
        assert_eq!(kind(&confinement), "unconfined");
        assert!(warning.is_some_and(|w| w.contains("no Landlock")));
        assert_eq!(kind(&settings.for_workspace_copy(&NONE)), "refused");
    }

    #[test]
    fn an_explicit_mode_refuses_by_default_and_obeys_the_fallback() {
        let explicit = SandboxSettings::default().with_mode(SandboxMode::ReadOnly);
        let (confinement, _) = explicit.for_session(&NONE);
        let Confinement::Refused(reason) = confinement else {
            panic!("expected a refusal");
        };
        assert!(reason.contains("--sandbox-fallback"), "{reason}");
        let lenient = explicit.with_fallback(SandboxFallback::Off);
        assert_eq!(kind(&lenient.for_session(&NONE).0), "unconfined");
        assert_eq!(kind(&lenient.for_workspace_copy(&NONE)), "unconfined");
    }

    #[test]
    fn off_leaves_sessions_unconfined_and_refuses_copies_unless_the_fallback_is_off() {
        let off = SandboxSettings::default().with_mode(SandboxMode::Off);
        assert_eq!(kind(&off.for_session(&LANDLOCK).0), "unconfined");
        assert_eq!(kind(&off.for_workspace_copy(&LANDLOCK)), "refused");
        let off = off.with_fallback(SandboxFallback::Off);
        assert_eq!(kind(&off.for_workspace_copy(&LANDLOCK)), "unconfined");
    }

    #[test]
    fn cutting_the_network_needs_seccomp() {
        let no_seccomp = Support {
            landlock_abi: Some(7),
            seccomp: false,
        };
        let settings = SandboxSettings::default().with_network(false);
        assert_eq!(kind(&settings.for_session(&no_seccomp).0), "unconfined");
        assert_eq!(
            kind(&SandboxSettings::default().for_session(&no_seccomp).0),
            "confined"
        );
    }
}
