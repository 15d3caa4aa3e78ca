//! Throwaway PostgreSQL clusters for tests: `initdb` into a temporary directory,
//! `postgres` on a free loopback port, stopped by PID.
//!
//! The server binaries come from `MECATED_PG_BIN` or the newest
//! `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package, which
//! `tests/peers/install.sh` installs). A missing PostgreSQL fails the test like any
//! missing peer (skipped only with `MECATED_SKIP_PEERS=1`, never under `CI=true`).
//! PostgreSQL refuses to run as root, so under root the cluster runs as the
//! `postgres` user (else `nobody`, else a system user `mecated-pg` created with
//! `useradd`).
//!
//! Stopping kills the postmaster and every backend by PID (they are not in its process
//! group) and waits for them. Each cluster has one superuser `mecated` with a random
//! password (SCRAM), listens
//! on `127.0.0.1` only (no Unix socket) and runs with `fsync=off`: a killed server
//! loses nothing it acknowledged (the WAL is written before a commit returns; only an
//! OS crash would need the fsync), and tests stay fast on a shared disk.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::{PeerProcess, READY_DEADLINE, skipping_allowed};

/// The superuser of every test cluster.
pub const PG_USER: &str = "mecated";

/// Where the PostgreSQL server binaries are; `None` when missing and skipping is
/// allowed (a `PEER-SKIP` line is printed).
///
/// # Panics
/// When PostgreSQL is missing and skipping is not allowed.
pub fn postgres_bin(test: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MECATED_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("postgres").exists() && bin.join("initdb").exists()).then_some((version, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Some(bin);
    }
    if skipping_allowed() {
        let line = format!("PEER-SKIP {test} postgresql\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return None;
    }
    panic!(
        "test {test} needs PostgreSQL (initdb and postgres under /usr/lib/postgresql/<version>/bin, \
         or MECATED_PG_BIN): run tests/peers/install.sh (or set MECATED_SKIP_PEERS=1 locally to skip; \
         never under CI=true)"
    );
}

/// A running throwaway cluster. Dropping it kills the server's process group.
pub struct PgCluster {
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    password: String,
    run_as: Option<(u32, u32)>,
    server: Option<PeerProcess>,
    extra: Vec<String>,
    owned_dir: Option<tempfile::TempDir>,
}

static NEXT_DATABASE: AtomicU32 = AtomicU32::new(0);

impl PgCluster {
    /// A new cluster of its own (killed on drop); `None` when PostgreSQL is
    /// missing and skipping is allowed.
    ///
    /// # Panics
    /// When PostgreSQL is missing (and skipping is not allowed) or does not start.
    pub fn start(test: &str) -> Option<Self> {
        Self::start_with(test, &[])
    }

    /// Like [`PgCluster::start`] with extra `-c name=value` server settings.
    ///
    /// # Panics
    /// When PostgreSQL is missing (and skipping is not allowed) or does not start.
    pub fn start_with(test: &str, settings: &[&str]) -> Option<Self> {
        let bin = postgres_bin(test)?;
        let dir = tempfile::Builder::new()
            .prefix("mecated-pg-")
            .tempdir()
            .expect("a temporary directory");
        let root = dir.path().to_path_buf();
        let mut cluster =
            Self::init(bin, root, settings, false, false).unwrap_or_else(|e| panic!("{test}: {e}"));
        cluster.owned_dir = Some(dir);
        Some(cluster)
    }

    /// A cluster of its own serving TLS (besides plaintext) with a server
    /// certificate for the name `localhost` only (not `127.0.0.1`), issued by a test
    /// certificate authority ([`PgCluster::ca_cert`]). Made with the `openssl` CLI.
    ///
    /// # Panics
    /// When PostgreSQL is missing (and skipping is not allowed), or the certificates
    /// or the server cannot be made.
    pub fn start_tls(test: &str) -> Option<Self> {
        let bin = postgres_bin(test)?;
        let dir = tempfile::Builder::new()
            .prefix("mecated-pg-")
            .tempdir()
            .expect("a temporary directory");
        let root = dir.path().to_path_buf();
        let mut cluster = Self::init(bin, root, &[], false, true).unwrap_or_else(|e| panic!("{test}: {e}"));
        cluster.owned_dir = Some(dir);
        Some(cluster)
    }

    /// The test certificate authority of a [`PgCluster::start_tls`] cluster (PEM).
    pub fn ca_cert(&self) -> PathBuf {
        self.root.join("ca.crt")
    }

    /// One cluster shared by every test of this test binary (each test uses its
    /// own database, [`PgCluster::fresh_database`]). It is started from a thread
    /// that lives as long as the process and dies with the process
    /// (`PR_SET_PDEATHSIG`); its directory is swept by the next run.
    ///
    /// # Panics
    /// When PostgreSQL is missing (and skipping is not allowed) or does not start.
    pub fn shared(test: &str) -> Option<&'static Self> {
        static SHARED: OnceLock<Result<PgCluster, String>> = OnceLock::new();
        let bin = postgres_bin(test)?;
        let cluster = SHARED.get_or_init(|| {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let started = shared_root().and_then(|root| Self::init(bin, root, &[], true, false));
                let _ = sender.send(started);
                // The server dies when this thread does: it never returns.
                loop {
                    std::thread::park();
                }
            });
            receiver
                .recv()
                .unwrap_or_else(|_| Err("the cluster thread died".to_owned()))
        });
        match cluster {
            Ok(cluster) => Some(cluster),
            Err(error) => panic!("{test}: the shared PostgreSQL cluster did not start: {error}"),
        }
    }

    fn init(
        bin: PathBuf,
        root: PathBuf,
        settings: &[&str],
        die_with_process: bool,
        tls: bool,
    ) -> Result<Self, String> {
        let run_as = unprivileged_user()?;
        let password = format!("pw-{:016x}", random_u64());
        std::fs::write(root.join("pwfile"), format!("{password}\n")).map_err(|e| format!("pwfile: {e}"))?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&root, Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))?;
            std::os::unix::fs::chown(root.join("pwfile"), Some(uid), Some(gid))
                .map_err(|e| format!("chown: {e}"))?;
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(root.join("data"))
            .args([
                "-U",
                PG_USER,
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", root.join("pwfile").display()));
        let output = as_user(&mut initdb, run_as)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.join("initdb").display()))?;
        if !output.status.success() {
            return Err(format!(
                "initdb failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let mut extra: Vec<String> = settings.iter().map(|s| (*s).to_owned()).collect();
        if tls {
            make_certificates(&root, run_as)?;
            extra.push("ssl=on".to_owned());
            extra.push(format!("ssl_cert_file={}", root.join("server.crt").display()));
            extra.push(format!("ssl_key_file={}", root.join("server.key").display()));
        }
        let mut cluster = Self {
            bin,
            root,
            port: 0,
            password,
            run_as,
            server: None,
            extra,
            owned_dir: None,
        };
        let server = PeerProcess::start(|port| cluster.server_command(port, die_with_process))?;
        cluster.port = server.port();
        cluster.server = Some(server);
        cluster.wait_ready()?;
        Ok(cluster)
    }

    fn server_command(&self, port: u16, die_with_process: bool) -> Command {
        let mut command = Command::new(self.bin.join("postgres"));
        command
            .arg("-D")
            .arg(self.root.join("data"))
            .args(["-p", &port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args([
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=200",
            ])
            .args(["-c", "shared_buffers=32MB"]);
        for setting in &self.extra {
            command.args(["-c", setting]);
        }
        as_user(&mut command, self.run_as);
        if die_with_process {
            die_with_parent(&mut command);
        }
        command
    }

    fn wait_ready(&self) -> Result<(), String> {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-t", "1"])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "PostgreSQL on port {} was not ready within {READY_DEADLINE:?}; log:\n{}",
                    self.port,
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The postmaster's PID (0 while stopped).
    pub fn pid(&self) -> u32 {
        self.server.as_ref().map_or(0, PeerProcess::pid)
    }

    /// `postgres://mecated:<password>@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{PG_USER}:{}@127.0.0.1:{}/{database}",
            self.password, self.port
        )
    }

    /// The same URL without the password (for `PGPASSWORD`).
    pub fn url_without_password(&self, database: &str) -> String {
        format!("postgres://{PG_USER}@127.0.0.1:{}/{database}", self.port)
    }

    /// Creates a database named `<prefix>_<n>` (unique in this process) and returns
    /// its name.
    ///
    /// # Panics
    /// When `CREATE DATABASE` fails.
    pub fn fresh_database(&self, prefix: &str) -> String {
        let n = NEXT_DATABASE.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}_{}_{n}", std::process::id());
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        name
    }

    /// Runs `sql` with `psql` in `database` and returns its unaligned, tuples-only
    /// output.
    ///
    /// # Panics
    /// When `psql` fails.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                PG_USER,
                "-d",
                database,
            ])
            .args(["-c", sql])
            .env("PGPASSWORD", &self.password)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        self.server
            .as_ref()
            .map(PeerProcess::stderr_text)
            .unwrap_or_default()
    }

    /// Kills the server with SIGKILL, postmaster and backends alike (a crash: the
    /// backends run in sessions of their own, so the process group alone would leave
    /// them serving their connections for a moment), and waits until every one of
    /// them is gone.
    pub fn kill(&mut self) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        let postmaster = i32::try_from(server.pid()).unwrap_or(i32::MAX);
        let family = children_of(postmaster);
        server.stop();
        for pid in &family {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let deadline = Instant::now() + READY_DEADLINE;
        while family.iter().chain([&postmaster]).any(|pid| running(*pid)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same port and data directory and waits until
    /// it accepts connections (crash recovery included).
    ///
    /// # Panics
    /// When it does not come back.
    pub fn restart(&mut self) {
        self.kill();
        let mut command = self.server_command(self.port, false);
        let server =
            PeerProcess::start_on(self.port, &mut command).unwrap_or_else(|e| panic!("restart: {e}"));
        self.server = Some(server);
        self.wait_ready().unwrap_or_else(|e| panic!("restart: {e}"));
    }

    /// The cluster's directory (data directory and password file inside).
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.kill();
        // The TempDir (when owned) goes with it.
        drop(self.owned_dir.take());
    }
}

/// A test CA (`ca.crt`) and a server certificate for `localhost` it issued
/// (`server.crt`, `server.key` readable by the server's user only).
fn make_certificates(root: &Path, run_as: Option<(u32, u32)>) -> Result<(), String> {
    let openssl = |args: &[&str]| -> Result<(), String> {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run openssl: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "openssl {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-new"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=mecated test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(&ca)?;
    let mut request = vec!["req", "-new"];
    request.extend(ec);
    request.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(&request)?;
    std::fs::write(
        root.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| format!("server.ext: {e}"))?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ])?;
    let key = root.join("server.key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(|e| format!("chmod server.key: {e}"))?;
    if let Some((uid, gid)) = run_as {
        for file in ["server.key", "server.crt"] {
            std::os::unix::fs::chown(root.join(file), Some(uid), Some(gid))
                .map_err(|e| format!("chown {file}: {e}"))?;
        }
    }
    Ok(())
}

/// The processes whose parent is `parent` (from `/proc`).
fn children_of(parent: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| stat_fields(*pid).is_some_and(|(_, ppid)| ppid == parent))
        .collect()
}

/// Whether `pid` exists and is not a zombie.
fn running(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// `(state, ppid)` of `pid` from `/proc/<pid>/stat` (the fields after the command
/// name, which may hold spaces and parentheses).
fn stat_fields(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// `$TMPDIR/mecated-test-pg/<pid>`: the shared cluster's directory. Directories of
/// processes that are gone are removed first.
fn shared_root() -> Result<PathBuf, String> {
    let base = std::env::temp_dir().join("mecated-test-pg");
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let alive = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let root = base.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    Ok(root)
}

/// `(uid, gid)` to run PostgreSQL as when this process is root.
fn unprivileged_user() -> Result<Option<(u32, u32)>, String> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    for name in ["postgres", "nobody", "mecated-pg"] {
        if let Some(ids) = passwd_entry(name) {
            return Ok(Some(ids));
        }
    }
    let status = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "mecated-pg",
        ])
        .status()
        .map_err(|e| format!("useradd: {e}"))?;
    if !status.success() {
        return Err(format!("useradd mecated-pg failed: {status}"));
    }
    passwd_entry("mecated-pg")
        .map(Some)
        .ok_or_else(|| "useradd created no mecated-pg".to_owned())
}

fn passwd_entry(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

fn as_user(command: &mut Command, run_as: Option<(u32, u32)>) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    if let Some((uid, gid)) = run_as {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
    command
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// Makes the server receive SIGKILL when the spawning thread dies (the shared
/// cluster's thread lives as long as the process). Set after the user switch, which
/// would clear it.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = nix::unistd::getpid();
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before `exec` and calls only
    // async-signal-safe functions (`prctl`, `getppid`); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other(
                    "the parent exited before the child started",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
