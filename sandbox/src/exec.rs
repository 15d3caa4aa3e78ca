//! [`Prepared`]: a ruleset descriptor and a compiled filter, installed in the child
//! between `fork` and `exec` by the crate's only unsafe function.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt as _;

use seccompiler::BpfProgram;

/// A sandbox ready for one command: a Landlock ruleset (an open descriptor) and, when
/// the network is cut, a seccomp program. Built by
/// [`SandboxPolicy::prepare`](crate::SandboxPolicy::prepare).
#[derive(Debug, Default)]
pub struct Prepared {
    ruleset: Option<OwnedFd>,
    filter: Option<BpfProgram>,
}

impl Prepared {
    pub(crate) fn new(ruleset: OwnedFd, filter: Option<BpfProgram>) -> Self {
        Self {
            ruleset: Some(ruleset),
            filter,
        }
    }

    /// Nothing to install: the command runs unconfined.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// Whether anything will be installed.
    pub fn confines(&self) -> bool {
        self.ruleset.is_some()
    }

    /// Makes `command`'s child confine itself before `exec`: `no_new_privs`, then
    /// `landlock_restrict_self`, then the seccomp filter. A failing step makes the
    /// spawn fail with that step's OS error, so a command never runs half-confined.
    /// Holding the descriptor and program, the command keeps them alive until it is
    /// dropped.
    pub fn apply_to(self, command: &mut std::process::Command) {
        let Some(ruleset) = self.ruleset else {
            return;
        };
        install(command, ruleset, self.filter);
    }
}

/// Registers the pre-exec hook. Everything is prepared here, in the parent; the hook
/// only makes system calls on memory it owns.
#[allow(unsafe_code)]
fn install(command: &mut std::process::Command, ruleset: OwnedFd, filter: Option<BpfProgram>) {
    let length = filter
        .as_ref()
        .map_or(0, |program| u16::try_from(program.len()).unwrap_or(u16::MAX));
    // SAFETY: the closure runs in the forked child before `exec`. It calls only
    // async-signal-safe system calls (`prctl`, `landlock_restrict_self`, `seccomp`)
    // through `libc::prctl`/`libc::syscall`, allocates nothing (the kernel's
    // `sock_fprog` is built on the stack), takes no lock, and builds its errors with
    // `Error::last_os_error` (no allocation). The ruleset descriptor is open in the
    // child (inherited; close-on-exec closes it only at `exec`). The program points
    // into `filter`'s buffer, owned by the closure and never changed; seccompiler's
    // `sock_filter` is `#[repr(C)]` with the kernel's layout, and the kernel copies the
    // program before the call returns.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(program) = &filter {
                let fprog = libc::sock_fprog {
                    len: length,
                    filter: program.as_ptr().cast::<libc::sock_filter>().cast_mut(),
                };
                if libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    std::ptr::from_ref(&fprog),
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}
