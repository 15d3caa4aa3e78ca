//! Where logins live: one file per server URL in a directory of this user's own
//! (`0700`, files `0600`), written whole through a temporary file and a rename, read
//! and replaced without following a symbolic link; or only in memory.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The most bytes a token file may hold.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The directory under the state directory that holds the token files.
const TOKEN_DIR: &str = "mecatl/mcp-auth";

/// How a client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TokenAuth {
    /// `client_id:client_secret` in an HTTP Basic `Authorization` header.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
    /// A public client: `client_id` in the form body, no secret.
    None,
}

/// Which grant produced the tokens (and renews them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Grant {
    /// A person authorized in a browser (renewed with the refresh token).
    AuthorizationCode,
    /// Machine to machine: the client's own credentials (renewed by asking again).
    ClientCredentials,
}

/// One login: the tokens and what renewing them needs.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Tokens {
    /// The RFC 8707 resource the tokens were issued for.
    pub(crate) resource: String,
    /// The authorization server's issuer, when it published one.
    pub(crate) issuer: Option<String>,
    /// Where tokens are refreshed.
    pub(crate) token_endpoint: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) token_auth: TokenAuth,
    pub(crate) grant: Grant,
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    /// Unix seconds when the access token expires (`None`: the server did not say).
    pub(crate) expires_at: Option<u64>,
    /// Unix seconds when the access token was issued.
    pub(crate) issued_at: u64,
    /// The scopes granted (or requested, when the server did not say).
    pub(crate) scopes: Vec<String>,
}

impl fmt::Debug for Tokens {
    // Tokens and the client secret never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[redacted]"),
            )
            .field("token_auth", &self.token_auth)
            .field("grant", &self.grant)
            .field("access_token", &"[redacted]")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[redacted]"),
            )
            .field("expires_at", &self.expires_at)
            .field("issued_at", &self.issued_at)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl Tokens {
    /// Whether the access token should be renewed before use at `now`: expired, or
    /// within `min(30 s, half its lifetime)` of expiring.
    pub(crate) fn expiring(&self, now: u64) -> bool {
        let Some(expires_at) = self.expires_at else {
            return false;
        };
        let lifetime = expires_at.saturating_sub(self.issued_at);
        let margin = (lifetime / 2).min(30);
        now.saturating_add(margin) >= expires_at
    }

    /// Whether the tokens can be renewed without a person.
    pub(crate) fn renewable(&self) -> bool {
        match self.grant {
            Grant::AuthorizationCode => self.refresh_token.is_some(),
            Grant::ClientCredentials => true,
        }
    }
}

/// What a token file holds.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    version: u32,
    /// The server URL the file belongs to (its name is a digest of it).
    server_url: String,
    login: Option<Tokens>,
}

/// A server's login state, as `mecated mcp list` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthStatus {
    /// No login is stored for the server.
    None,
    /// A login is stored and usable (renewed when it expires, when it can be).
    LoggedIn {
        /// Unix seconds when the access token expires (`None`: not said).
        expires_at: Option<u64>,
        /// Whether it is renewed without a person when it expires.
        renewable: bool,
    },
    /// The stored login expired and cannot be renewed (or was rejected).
    NeedsLogin,
}

/// Where a server's login is kept.
#[derive(Clone)]
pub struct TokenStore {
    place: Place,
}

#[derive(Clone)]
enum Place {
    Dir(PathBuf),
    Memory(Arc<Mutex<HashMap<String, Tokens>>>),
}

impl fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.place {
            Place::Dir(dir) => f.debug_tuple("TokenStore::Dir").field(dir).finish(),
            Place::Memory(_) => f.write_str("TokenStore::Memory"),
        }
    }
}

impl Default for TokenStore {
    fn default() -> Self {
        Self::memory()
    }
}

/// Why a token file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("MCP login store {path}: {reason}")]
pub struct TokenStoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What went wrong and what is expected.
    pub reason: String,
}

fn guard() -> fs_guard::Guard {
    fs_guard::Guard {
        symlink: "it is a symbolic link (expected a regular file of this user's own)",
        fifo_or_socket: Some("it is a FIFO or socket (expected a regular file)"),
        directory: Some("it is a directory (expected a regular file)"),
        not_regular: |kind| format!("it is a {kind} (expected a regular file)"),
    }
}

/// Unix seconds now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl TokenStore {
    /// Logins kept in this directory (created `0700` when missing).
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            place: Place::Dir(dir.into()),
        }
    }

    /// Logins kept in memory only, for this process.
    pub fn memory() -> Self {
        Self {
            place: Place::Memory(Arc::default()),
        }
    }

    /// The default directory: `$XDG_STATE_HOME/mecatl/mcp-auth`, else
    /// `$HOME/.local/state/mecatl/mcp-auth`; `None` without either.
    pub fn default_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let absolute =
            |value: Option<String>| value.filter(|v| Path::new(v).is_absolute()).map(PathBuf::from);
        if let Some(state) = absolute(env("XDG_STATE_HOME")) {
            return Some(state.join(TOKEN_DIR));
        }
        absolute(env("HOME")).map(|home| home.join(".local/state").join(TOKEN_DIR))
    }

    /// The directory, for a file store.
    pub fn path(&self) -> Option<&Path> {
        match &self.place {
            Place::Dir(dir) => Some(dir),
            Place::Memory(_) => None,
        }
    }

    fn file(dir: &Path, server_url: &str) -> PathBuf {
        let digest = Sha256::digest(server_url.as_bytes());
        let name: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        dir.join(format!("{name}.json"))
    }

    /// The login stored for `server_url`, if any.
    pub(crate) fn load(&self, server_url: &str) -> Result<Option<Tokens>, TokenStoreError> {
        match &self.place {
            Place::Memory(map) => Ok(lock(map).get(server_url).cloned()),
            Place::Dir(dir) => {
                let path = Self::file(dir, server_url);
                Ok(read_file(&path)?
                    .filter(|file| file.server_url == server_url)
                    .and_then(|file| file.login))
            }
        }
    }

    /// Stores `login` for `server_url` (replacing the previous one whole).
    pub(crate) fn save(&self, server_url: &str, login: Option<&Tokens>) -> Result<(), TokenStoreError> {
        match &self.place {
            Place::Memory(map) => {
                match login {
                    Some(login) => lock(map).insert(server_url.to_owned(), login.clone()),
                    None => lock(map).remove(server_url),
                };
                Ok(())
            }
            Place::Dir(dir) => {
                let file = TokenFile {
                    version: 1,
                    server_url: server_url.to_owned(),
                    login: login.cloned(),
                };
                write_file(dir, &Self::file(dir, server_url), &file)
            }
        }
    }

    /// Removes the login of `server_url`; whether there was one.
    ///
    /// # Errors
    /// [`TokenStoreError`] when the file exists but cannot be removed, or is not a
    /// regular file.
    pub fn remove(&self, server_url: &str) -> Result<bool, TokenStoreError> {
        match &self.place {
            Place::Memory(map) => Ok(lock(map).remove(server_url).is_some()),
            Place::Dir(dir) => {
                let path = Self::file(dir, server_url);
                let existed = read_file(&path)?.is_some();
                if existed {
                    std::fs::remove_file(&path).map_err(|e| error(&path, &e))?;
                    let _ = fs_guard::sync_dir(dir);
                }
                Ok(existed)
            }
        }
    }

    /// The login state of `server_url`.
    ///
    /// # Errors
    /// [`TokenStoreError`] when its file cannot be read.
    pub fn status(&self, server_url: &str) -> Result<AuthStatus, TokenStoreError> {
        let file_exists = match &self.place {
            Place::Dir(dir) => read_file(&Self::file(dir, server_url))?.is_some(),
            Place::Memory(_) => false,
        };
        Ok(match self.load(server_url)? {
            Some(login) if !login.expiring(now_secs()) || login.renewable() => AuthStatus::LoggedIn {
                expires_at: login.expires_at,
                renewable: login.renewable(),
            },
            Some(_) => AuthStatus::NeedsLogin,
            None if file_exists => AuthStatus::NeedsLogin,
            None => AuthStatus::None,
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn error(path: &Path, error: &io::Error) -> TokenStoreError {
    TokenStoreError {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

fn read_file(path: &Path) -> Result<Option<TokenFile>, TokenStoreError> {
    let Some((file, meta)) = guard().open_existing(path).map_err(|e| error(path, &e))? else {
        return Ok(None);
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(TokenStoreError {
            path: path.to_path_buf(),
            reason: format!(
                "it holds {} bytes (expected at most {MAX_FILE_BYTES})",
                meta.len()
            ),
        });
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| error(path, &e))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| TokenStoreError {
            path: path.to_path_buf(),
            reason: format!("it is not a login file ({e}); remove it with `mecated mcp logout`"),
        })
}

/// Creates `dir` `0700` when missing; refuses a symbolic link or a directory others
/// can enter.
fn private_dir(dir: &Path) -> Result<(), TokenStoreError> {
    if !dir.exists() {
        fs_guard::create_private_dir(dir).map_err(|e| error(dir, &e))?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| error(dir, &e))?;
    if !meta.is_dir() {
        return Err(TokenStoreError {
            path: dir.to_path_buf(),
            reason: format!("it is a {} (expected a directory)", fs_guard::file_kind(&meta)),
        });
    }
    if let Some(mode) = fs_guard::loose_dir_mode(&meta) {
        return Err(TokenStoreError {
            path: dir.to_path_buf(),
            reason: format!("its mode is {mode:o} (expected 700: only this user may enter it)"),
        });
    }
    Ok(())
}

fn write_file(dir: &Path, path: &Path, file: &TokenFile) -> Result<(), TokenStoreError> {
    private_dir(dir)?;
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && !meta.is_file()
    {
        return Err(TokenStoreError {
            path: path.to_path_buf(),
            reason: format!(
                "it is a {} (expected a regular file of this user's own)",
                fs_guard::file_kind(&meta)
            ),
        });
    }
    let bytes = serde_json::to_vec_pretty(file).map_err(|e| TokenStoreError {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let temp = dir.join(format!(".{}.{}.{nanos}.tmp", std::process::id(), now_secs()));
    let written = (|| {
        let mut out = guard().create_new(&temp)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        std::fs::rename(&temp, path)?;
        fs_guard::sync_dir(dir)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error(path, &e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn tokens(access: &str, expires_at: Option<u64>, refresh: Option<&str>) -> Tokens {
        Tokens {
            resource: "https://mcp.example/mcp".into(),
            issuer: Some("https://as.example".into()),
            token_endpoint: "https://as.example/token".into(),
            client_id: "client".into(),
            client_secret: Some("client-secret-value".into()),
            token_auth: TokenAuth::ClientSecretBasic,
            grant: Grant::AuthorizationCode,
            access_token: access.into(),
            refresh_token: refresh.map(str::to_owned),
            expires_at,
            issued_at: 1_000,
            scopes: vec!["read".into()],
        }
    }

    const URL: &str = "https://mcp.example/mcp";

    #[test]
    fn a_login_is_written_whole_into_a_private_file_of_a_private_directory() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("state/mecatl/mcp-auth");
        let store = TokenStore::dir(&dir);
        store.save(URL, Some(&tokens("access-1", None, None))).unwrap();
        store.save(URL, Some(&tokens("access-2", None, None))).unwrap();
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "one file, no temporary file left: {files:?}");
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(store.load(URL).unwrap().unwrap().access_token, "access-2");
        assert!(store.load("https://other.example/mcp").unwrap().is_none());
        assert!(store.remove(URL).unwrap());
        assert!(!store.remove(URL).unwrap());
        assert_eq!(store.status(URL).unwrap(), AuthStatus::None);
    }

    #[test]
    fn a_symlinked_login_file_or_a_loose_directory_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("mcp-auth");
        let store = TokenStore::dir(&dir);
        store.save(URL, Some(&tokens("access", None, None))).unwrap();
        let file = TokenStore::file(&dir, URL);
        let elsewhere = home.path().join("elsewhere.json");
        std::fs::rename(&file, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        let read = store.load(URL).unwrap_err();
        assert!(read.reason.contains("symbolic link"), "{read}");
        let write = store.save(URL, Some(&tokens("other", None, None))).unwrap_err();
        assert!(write.reason.contains("symbolic link"), "{write}");
        assert!(
            std::fs::read_to_string(&elsewhere)
                .unwrap()
                .contains("\"access\""),
            "the target is untouched"
        );

        std::fs::remove_file(&file).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let loose = store.save(URL, Some(&tokens("access", None, None))).unwrap_err();
        assert!(
            loose.reason.contains("755") && loose.reason.contains("700"),
            "{loose}"
        );
    }

    #[test]
    fn the_status_says_whether_a_login_is_usable() {
        let store = TokenStore::memory();
        assert_eq!(store.status(URL).unwrap(), AuthStatus::None);
        store.save(URL, Some(&tokens("a", Some(1_001), None))).unwrap();
        assert_eq!(
            store.status(URL).unwrap(),
            AuthStatus::NeedsLogin,
            "expired, no refresh token"
        );
        store
            .save(URL, Some(&tokens("a", Some(1_001), Some("r"))))
            .unwrap();
        assert_eq!(
            store.status(URL).unwrap(),
            AuthStatus::LoggedIn {
                expires_at: Some(1_001),
                renewable: true
            }
        );
    }

    #[test]
    fn an_access_token_is_renewed_near_its_expiry_not_before() {
        let login = tokens("a", Some(1_000 + 3_600), Some("r"));
        assert!(!login.expiring(1_000 + 3_500));
        assert!(login.expiring(1_000 + 3_571), "within 30 s of expiry");
        let short = tokens("a", Some(1_000 + 10), Some("r"));
        assert!(!short.expiring(1_004));
        assert!(short.expiring(1_005), "within half a short lifetime");
        assert!(!tokens("a", None, None).expiring(u64::MAX), "no expiry said");
    }

    #[test]
    fn debug_output_shows_no_token_or_secret() {
        let text = format!(
            "{:?}",
            tokens("access-token-value", Some(5), Some("refresh-token-value"))
        );
        for secret in ["access-token-value", "refresh-token-value", "client-secret-value"] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
