//! [`Db`]: the connection pool and the one way every statement is run — under a
//! deadline, retried while the failure says the statement did not take effect (or the
//! attempt can recognise its own earlier write), never waiting forever.
//!
//! | failure | meaning | what happens |
//! |---|---|---|
//! | no connection (refused, connect timeout, pool wait), SQLSTATE class 08, `57P01`–`57P03` (shutdown, restart), `40001`, `40P01`, `53300` | nothing was committed | retried with backoff (50 ms doubling to 1 s) until the deadline |
//! | the connection broke after the statement went out, or the client stopped waiting | it may or may not have been committed | the connection is discarded; retried with [`Attempt::after_lost_reply`] set, so writes check for their own row first |
//! | any other server error (statement timeout `57014`, constraint, …) | the statement failed | returned at once |
//!
//! **Outages.** An operation that found no connection for its whole time limit marks
//! the database unreachable; until a connection is made again, each later operation
//! only probes for [`OUTAGE_PROBE`] before failing (naming how long the outage has
//! lasted), so a run that meets an outage ends about one time limit after it began
//! instead of one time limit per remaining write (the end-of-run save, the lease's
//! release). The first connection made restores the full time limit.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use engine_ports::{SessionId, StoreError};
use tokio_postgres::error::SqlState;

use crate::options::PgStoreOptions;
use crate::tls;
use crate::url::StoreUrl;

/// The client side keeps waiting this much longer than the server's
/// `statement_timeout`, so a slow statement is reported by the server.
const CLIENT_GRACE: Duration = Duration::from_secs(1);
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long an operation tries to connect while the database is known unreachable.
pub(crate) const OUTAGE_PROBE: Duration = Duration::from_secs(1);

/// The pool of one store plus what its errors name.
pub(crate) struct Db {
    pool: Pool,
    target: String,
    timeout: Duration,
    /// Since when no operation could connect (set when one gave up for want of a
    /// connection, cleared by the next connection made).
    outage: Mutex<Option<Instant>>,
}

/// What an attempt knows about the ones before it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Attempt {
    /// An earlier attempt lost its reply: its write may have been committed, so a
    /// non-idempotent write first looks for its own row (by its write id).
    pub(crate) after_lost_reply: bool,
}

/// How an attempt failed.
enum Failure {
    /// Certainly not committed: try again.
    Transient(String),
    /// The reply was lost: try again, telling the next attempt.
    LostReply(String),
    /// Final.
    Fatal(String),
}

impl Db {
    /// A pool for `url` (no connection yet).
    pub(crate) fn new(url: &StoreUrl, options: &PgStoreOptions) -> Result<Self, String> {
        let connector = tls::connector(url)?;
        let manager = Manager::from_config(
            url.config().clone(),
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let limit_ms = options.timeout.as_millis().max(1);
        let setup = format!(
            "SET statement_timeout = {limit_ms}; SET lock_timeout = {limit_ms}; \
             SET idle_in_transaction_session_timeout = {}",
            limit_ms.saturating_mul(2)
        );
        let connect = url.connect_timeout();
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.timeout))
            // A whole connection (TCP, TLS, startup, authentication) within the
            // connect timeout, as libpq's `connect_timeout` means it.
            .create_timeout(Some(connect))
            .recycle_timeout(Some(options.timeout))
            .post_create(Hook::async_fn(move |client, _| {
                let setup = setup.clone();
                Box::pin(async move {
                    client.batch_execute(&setup).await.map_err(|e| {
                        HookError::message(format!("setting the session's time limits failed: {e}"))
                    })
                })
            }))
            .build()
            .map_err(|e| format!("the connection pool cannot be built: {e}"))?;
        Ok(Self {
            pool,
            target: url.target(),
            timeout: options.timeout,
            outage: Mutex::new(None),
        })
    }

    /// `host:port/database`.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// One connection, for startup: a single attempt bounded by `limit`.
    pub(crate) async fn connect_once(&self, limit: Duration) -> Result<Object, String> {
        match tokio::time::timeout(limit, self.pool.get()).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(error)) => Err(pool_failure(&error)),
            Err(_) => Err(format!("no connection within {limit:?}")),
        }
    }

    /// One connection and `SELECT 1`, each attempted once within the store's time
    /// limit (a readiness check: no retry, so a server that is down says so at once).
    /// A connection that did not answer is never handed out again.
    ///
    /// # Errors
    /// [`StoreError::Backend`] naming the server: no connection, or no answer.
    pub(crate) async fn probe(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        let client = self
            .connect_once(self.timeout)
            .await
            .map_err(|reason| self.error("probe", None, reason))?;
        let remaining = self.timeout.saturating_sub(started.elapsed());
        match tokio::time::timeout(remaining, client.simple_query("SELECT 1")).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(self.error("probe", None, describe(&error))),
            Err(_) => {
                drop(Object::take(client));
                Err(self.error("probe", None, format!("no answer within {:?}", self.timeout)))
            }
        }
    }

    /// The retry state of one operation (see [`retrying!`]): the full time limit, or
    /// a probe of [`OUTAGE_PROBE`] while the database is known unreachable.
    pub(crate) fn tries<'a>(&'a self, op: &'static str, id: Option<&'a SessionId>) -> Tries<'a> {
        let started = Instant::now();
        let outage = self.outage_since();
        let limit = if outage.is_some() {
            OUTAGE_PROBE
        } else {
            self.timeout + CLIENT_GRACE
        };
        Tries {
            db: self,
            op,
            id,
            started,
            deadline: started + limit,
            backoff: FIRST_BACKOFF,
            attempt: Attempt::default(),
            tries: 0,
            outage,
            unconnected: false,
        }
    }

    /// Since when the database has been unreachable, if it is.
    fn outage_since(&self) -> Option<Instant> {
        *self
            .outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that no connection could be made since `since` (the earliest wins).
    fn outage_began(&self, since: Instant) {
        let mut outage = self
            .outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if outage.is_none_or(|known| since < known) {
            *outage = Some(since);
            tracing::warn!(
                target = %self.target,
                "the database is unreachable; store operations fail after a short probe until it is back"
            );
        }
    }

    /// A connection was made: the outage, if any, is over.
    fn outage_ended(&self) {
        let ended = self
            .outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(since) = ended {
            tracing::info!(
                target = %self.target,
                lasted_secs = since.elapsed().as_secs_f64(),
                "the database is reachable again"
            );
        }
    }

    /// A [`StoreError::Backend`] naming the server.
    pub(crate) fn error(
        &self,
        op: &'static str,
        id: Option<&SessionId>,
        reason: impl std::fmt::Display,
    ) -> StoreError {
        StoreError::Backend {
            id: id.cloned(),
            op,
            reason: format!("PostgreSQL at {}: {reason}", self.target),
        }
    }

    /// Closes the pool: idle connections end, later operations fail at once.
    pub(crate) fn close(&self) {
        self.pool.close();
    }
}

/// One operation's attempts: a deadline, the backoff and what earlier attempts
/// left behind.
pub(crate) struct Tries<'a> {
    db: &'a Db,
    op: &'static str,
    id: Option<&'a SessionId>,
    started: Instant,
    deadline: Instant,
    backoff: Duration,
    attempt: Attempt,
    tries: u32,
    /// Since when the database was known unreachable when the operation began.
    outage: Option<Instant>,
    /// Whether the last attempt found no connection (giving up then is an outage).
    unconnected: bool,
}

impl Tries<'_> {
    /// What the next attempt should know.
    pub(crate) fn attempt(&self) -> Attempt {
        self.attempt
    }

    /// A pooled connection, retrying until the deadline.
    ///
    /// # Errors
    /// The pool is closed, or no connection came before the deadline.
    pub(crate) async fn client(&mut self) -> Result<Object, StoreError> {
        loop {
            self.tries += 1;
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            let failure = match tokio::time::timeout(remaining, self.db.pool.get()).await {
                Err(_) => {
                    self.unconnected = true;
                    Failure::Transient(format!("no connection within {remaining:?}"))
                }
                Ok(Ok(client)) => {
                    self.unconnected = false;
                    if self.outage.take().is_some() {
                        // Reachable again: this operation gets the full time limit.
                        self.deadline = self.started + self.db.timeout + CLIENT_GRACE;
                    }
                    self.db.outage_ended();
                    return Ok(client);
                }
                Ok(Err(PoolError::Closed)) => Failure::Fatal("the store is closed".to_owned()),
                Ok(Err(other)) => {
                    self.unconnected = true;
                    Failure::Transient(pool_failure(&other))
                }
            };
            self.pause(failure).await?;
        }
    }

    /// Runs one attempt's statements, bounded by the deadline (`None`: it passed).
    pub(crate) async fn within<T>(
        &self,
        statements: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Option<Result<T, tokio_postgres::Error>> {
        tokio::time::timeout_at(self.deadline.into(), statements)
            .await
            .ok()
    }

    /// The attempt's value, or `None` after the pause before the next attempt.
    ///
    /// # Errors
    /// A final failure, or the deadline passed.
    pub(crate) async fn settle<T>(
        &mut self,
        client: Object,
        outcome: Option<Result<T, tokio_postgres::Error>>,
    ) -> Result<Option<T>, StoreError> {
        let failure = match outcome {
            Some(Ok(value)) => return Ok(Some(value)),
            Some(Err(error)) => classify(&error),
            None => Failure::LostReply(format!("no answer within {:?}", self.db.timeout + CLIENT_GRACE)),
        };
        if matches!(failure, Failure::LostReply(_)) {
            // A broken or stalled connection is never handed out again.
            drop(Object::take(client));
        }
        self.pause(failure).await?;
        Ok(None)
    }

    async fn pause(&mut self, failure: Failure) -> Result<(), StoreError> {
        let reason = match failure {
            Failure::Fatal(reason) => return Err(self.db.error(self.op, self.id, reason)),
            Failure::LostReply(reason) => {
                self.attempt.after_lost_reply = true;
                reason
            }
            Failure::Transient(reason) => reason,
        };
        let now = Instant::now();
        if now + self.backoff >= self.deadline {
            let waited = now.duration_since(self.started).as_secs_f64();
            if !self.unconnected {
                return Err(self.db.error(
                    self.op,
                    self.id,
                    format!(
                        "{reason} (gave up after {} attempts in {waited:.1} s)",
                        self.tries
                    ),
                ));
            }
            let since = self.outage.unwrap_or(self.started);
            self.db.outage_began(since);
            return Err(self.db.error(
                self.op,
                self.id,
                format!(
                    "{reason} (gave up after {} attempts in {waited:.1} s; unreachable for {:.1} s)",
                    self.tries,
                    now.duration_since(since).as_secs_f64()
                ),
            ));
        }
        tracing::debug!(op = self.op, target = %self.db.target, %reason, "retrying a database operation");
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        Ok(())
    }
}

/// Runs `$body` (an async block's contents returning `Result<T, tokio_postgres::Error>`,
/// with the connection bound to `$client` and the [`Attempt`] to `$attempt`) on `$db`
/// until it succeeds, fails for good or the deadline passes; evaluates to
/// `Result<T, StoreError>`.
macro_rules! retrying {
    ($db:expr, $op:expr, $id:expr, |$client:ident, $attempt:ident| $body:block) => {{
        let mut tries = $db.tries($op, $id);
        async {
            loop {
                #[allow(unused_mut)]
                let mut $client = tries.client().await?;
                #[allow(unused_variables)]
                let $attempt: $crate::db::Attempt = tries.attempt();
                let outcome = tries.within(async { $body }).await;
                if let Some(value) = tries.settle($client, outcome).await? {
                    break Ok::<_, engine_ports::StoreError>(value);
                }
            }
        }
        .await
    }};
}

pub(crate) use retrying;

/// A database error's message and SQLSTATE, or the client error with its causes
/// (tokio-postgres' own `Display` leaves the causes out). Never holds the password:
/// neither the server nor the client puts it in an error.
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn classify(error: &tokio_postgres::Error) -> Failure {
    if let Some(db) = error.as_db_error() {
        let code = db.code();
        let text = describe(error);
        let not_committed = code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::TOO_MANY_CONNECTIONS,
            ]
            .contains(code);
        return if not_committed {
            Failure::Transient(text)
        } else {
            Failure::Fatal(text)
        };
    }
    // No server answer: the connection broke (or was already closed) with the
    // statement possibly sent.
    Failure::LostReply(describe(error))
}

/// Why the pool gave no connection, without credentials (tokio-postgres' messages
/// never carry the password).
fn pool_failure(error: &PoolError) -> String {
    match error {
        PoolError::Backend(error) => describe(error),
        PoolError::PostCreateHook(error) => error.to_string(),
        PoolError::Timeout(_) => {
            "no connection in time (connect timeout or the pool is exhausted)".to_owned()
        }
        PoolError::Closed => "the store is closed".to_owned(),
        PoolError::NoRuntimeSpecified => "no runtime".to_owned(),
    }
}
