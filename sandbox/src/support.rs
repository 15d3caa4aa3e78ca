//! [`support`]: what the running kernel offers, probed once per process.

use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetError, Scope,
};

/// What the running kernel offers the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (1 = Linux 5.13's first one), `None` when Landlock is
    /// not built in or not enabled.
    pub landlock_abi: Option<u8>,
    /// Whether seccomp filters can be installed (the kernel reports a `Seccomp:` mode
    /// for processes).
    pub seccomp: bool,
}

impl Support {
    /// Whether commands can be confined: Landlock is there, and seccomp too when the
    /// network must be cut.
    pub fn can_confine(&self, network: bool) -> bool {
        self.landlock_abi.is_some() && (network || self.seccomp)
    }

    /// A short human description (`Landlock ABI 7, seccomp`).
    pub fn describe(&self) -> String {
        let landlock = match self.landlock_abi {
            Some(abi) => format!("Landlock ABI {abi}"),
            None => "no Landlock".to_owned(),
        };
        let seccomp = if self.seccomp { "seccomp" } else { "no seccomp" };
        format!("{landlock}, {seccomp}")
    }
}

/// The kernel's support, probed on the first call and remembered for the process.
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        landlock_abi: landlock_abi(),
        seccomp: seccomp_available(),
    })
}

/// One feature check of [`landlock_abi`].
type Probe<'a> = dyn Fn() -> Result<(), RulesetError> + 'a;

/// The highest ABI whose features the kernel accepts as hard requirements (the crate
/// keeps its own probe private): ABI 7 by its logging flag, 6 by its scopes, 5, 3 and 2
/// by their filesystem rights, 4 by its network rights, 1 by the first rights.
fn landlock_abi() -> Option<u8> {
    let hard = || Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    let fs = |abi: ABI| hard().handle_access(AccessFs::from_all(abi));
    let probes: [(u8, &Probe<'_>); 7] = [
        (7, &|| {
            fs(ABI::V1)?.create()?.log_same_exec(false)?;
            Ok(())
        }),
        (6, &|| {
            hard().scope(Scope::from_all(ABI::V6))?.create()?;
            Ok(())
        }),
        (5, &|| fs(ABI::V5)?.create().map(drop)),
        (4, &|| {
            hard()
                .handle_access(AccessNet::from_all(ABI::V4))?
                .create()
                .map(drop)
        }),
        (3, &|| fs(ABI::V3)?.create().map(drop)),
        (2, &|| fs(ABI::V2)?.create().map(drop)),
        (1, &|| fs(ABI::V1)?.create().map(drop)),
    ];
    probes
        .iter()
        .find_map(|(number, probe)| probe().is_ok().then_some(*number))
}

/// Whether `/proc/self/status` has a `Seccomp:` line (kernels built with seccomp).
fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|status| status.lines().any(|line| line.starts_with("Seccomp:")))
        .unwrap_or(false)
}
