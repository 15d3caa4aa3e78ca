//! [`support`]: what the running kernel offers, probed once per process.

use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};

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

/// The highest ABI whose every filesystem right the kernel accepts as a hard
/// requirement (the crate does not expose its own probe).
fn landlock_abi() -> Option<u8> {
    const KNOWN: [(ABI, u8); 7] = [
        (ABI::V7, 7),
        (ABI::V6, 6),
        (ABI::V5, 5),
        (ABI::V4, 4),
        (ABI::V3, 3),
        (ABI::V2, 2),
        (ABI::V1, 1),
    ];
    KNOWN.into_iter().find_map(|(abi, number)| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| ruleset.create())
            .ok()
            .map(|_| number)
    })
}

/// Whether `/proc/self/status` has a `Seccomp:` line (kernels built with seccomp).
fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|status| status.lines().any(|line| line.starts_with("Seccomp:")))
        .unwrap_or(false)
}
