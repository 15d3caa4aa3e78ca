//! Confines a child process before it execs: the filesystem through Landlock (read
//! anywhere, write only the writable roots; optionally some paths unreadable) and the
//! network through a seccomp filter that refuses IP sockets.
//!
//! The flow: [`SandboxSettings`] (what the operator asked for) and the kernel's
//! [`support`] give a [`Confinement`] (confine, run unconfined, or refuse), decided in
//! one place for a session's commands ([`SandboxSettings::for_session`]) and for a
//! child working on a workspace copy ([`SandboxSettings::for_workspace_copy`]). A
//! [`SandboxPolicy`] prepares, in the parent, a [`Prepared`] ruleset and filter for
//! one command's writable roots; [`Prepared::apply_to`] installs them on a
//! `std::process::Command` (or a tokio one through `as_std_mut`) so the child
//! restricts itself between `fork` and `exec` with three system calls and nothing
//! else. [`PrivateTemp`] is the 0700 directory a runner gives its commands as
//! `TMPDIR`.
//!
//! What it does not stop is listed in the crate's README: reading is allowed
//! everywhere unless denied, Unix sockets stay open (so a local daemon reachable
//! through one can act for the command), and an unconfined mode is today's behaviour.

mod exec;
mod network;
mod policy;
mod settings;
mod support;
mod temp;

pub use engine_ports::{ParseSandboxModeError, SandboxMode, SandboxStatus};
pub use exec::Prepared;
pub use policy::{DEVICE_FILES, SandboxError, SandboxPolicy};
pub use settings::{Confinement, ParseFallbackError, SandboxFallback, SandboxSettings, canonical_deny_path};
pub use support::{Support, support};
pub use temp::PrivateTemp;
