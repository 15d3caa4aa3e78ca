//! The seccomp filter of `--sandbox-network=false`: `socket()` of any family but Unix
//! and netlink fails with `EACCES`, and so does `io_uring_setup` (io_uring can open
//! sockets without the `socket` system call).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::policy::SandboxError;

/// The x32 ABI's system-call bit on x86-64: x32 calls share the architecture tag, so
/// each refused call is refused under its x32 number too.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The compiled filter. Calls of another architecture than the build's (32-bit
/// `int 0x80` on x86-64) kill the process, as seccompiler's filters always do.
pub(crate) fn filter() -> Result<BpfProgram, SandboxError> {
    let error = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let not = |family: i32| {
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            u64::from(family.unsigned_abs()),
        )
        .map_err(error)
    };
    let ip_socket = SeccompRule::new(vec![not(libc::AF_UNIX)?, not(libc::AF_NETLINK)?]).map_err(error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![ip_socket]);
    // An empty rule list matches the call whatever its arguments.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_socket | X32_BIT, Vec::new());
        rules.insert(libc::SYS_io_uring_setup | X32_BIT, Vec::new());
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(error)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )
    .map_err(error)?;
    BpfProgram::try_from(filter).map_err(|e| SandboxError::Seccomp(e.to_string()))
}
