//! Run leases: a row per leased session in `mecated_run_leases` (holder token,
//! expiry in database time), renewed by one background task per store, released
//! when the [`RunLease`] is released or dropped.
//!
//! - **Taking** is one upsert that succeeds only when no row exists, the row has
//!   expired, or it is already ours (so a retry after a lost reply is harmless):
//!   never waits on another holder.
//! - **Renewing**: every third of the TTL, one `UPDATE … WHERE holder = ANY(…)` for
//!   every lease the store holds. A lease the update no longer finds was taken over
//!   after it expired: it is marked lost and logged; the writes it fences then fail.
//! - **Releasing**: `RunLease::release` deletes the row (holder-checked) and
//!   returns once it is gone, so the holder's next step (the engine announcing the
//!   end of the run) never races another replica's acquire. A plain drop releases
//!   off the dropping thread: the slot turns `Releasing`, a task deletes the row and
//!   frees the slot; an acquire or delete of that id in this store waits for that
//!   release (bounded), so drop-then-acquire in one process never sees its own row.
//! - **A dead holder** renews nothing: its rows expire after the TTL and any replica
//!   may take them. Rows survive a database restart (they are ordinary rows), so a
//!   restart shorter than the TTL keeps every lease.
//! - **Fencing**: while a store holds a lease, its saves, appends and records of
//!   that session carry the holder token and write only if the row still names it
//!   (`FOR SHARE`, so a takeover waits for the write in flight): a holder that lost
//!   its lease cannot overwrite the new holder's session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use engine_ports::{LeaseRelease, RunLease, SessionId, StoreError};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::store::Shared;

/// This store's view of the leases it takes, holds and releases.
#[derive(Default)]
pub(crate) struct Leases {
    slots: Mutex<HashMap<SessionId, Slot>>,
}

enum Slot {
    /// An acquire or delete of the id is talking to the database.
    Claimed,
    /// Held under this token.
    Held { token: Uuid, lost: bool },
    /// The row is being deleted; waiters are woken when it is gone.
    Releasing(Arc<Notify>),
}

/// A local claim on an id (no other acquire or delete of it in this store) until
/// it is dropped or turned into a held lease.
pub(crate) struct Claim {
    shared: Weak<Shared>,
    id: SessionId,
    armed: bool,
}

impl Leases {
    fn slots(&self) -> MutexGuard<'_, HashMap<SessionId, Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The holder token fencing writes of `id`, while this store holds its lease.
    pub(crate) fn fence(&self, id: &SessionId) -> Option<Uuid> {
        match self.slots().get(id) {
            Some(Slot::Held { token, .. }) => Some(*token),
            _ => None,
        }
    }

    /// Tokens of every lease held, for renewal.
    fn held(&self) -> Vec<(SessionId, Uuid)> {
        self.slots()
            .iter()
            .filter_map(|(id, slot)| match slot {
                Slot::Held { token, lost: false } => Some((id.clone(), *token)),
                _ => None,
            })
            .collect()
    }

    fn mark_lost(&self, id: &SessionId, token: Uuid) {
        if let Some(Slot::Held { token: held, lost }) = self.slots().get_mut(id)
            && *held == token
        {
            *lost = true;
        }
    }
}

/// Claims `id` locally: `Busy` while this store holds or is taking its lease; waits
/// (bounded by the store's timeout) while its release is in flight.
pub(crate) async fn claim(
    shared: &Arc<Shared>,
    id: &SessionId,
    op: &'static str,
) -> Result<Claim, StoreError> {
    let deadline = tokio::time::Instant::now() + shared.options.timeout;
    loop {
        let notify = {
            let mut slots = shared.leases.slots();
            match slots.get(id) {
                None => {
                    slots.insert(id.clone(), Slot::Claimed);
                    return Ok(Claim {
                        shared: Arc::downgrade(shared),
                        id: id.clone(),
                        armed: true,
                    });
                }
                Some(Slot::Claimed | Slot::Held { .. }) => return Err(StoreError::Busy { id: id.clone() }),
                Some(Slot::Releasing(notify)) => Arc::clone(notify),
            }
        };
        let released = notify.notified();
        // Re-check after registering: the release may have finished in between.
        if !matches!(shared.leases.slots().get(id), Some(Slot::Releasing(_))) {
            continue;
        }
        if tokio::time::timeout_at(deadline, released).await.is_err() {
            return Err(shared.db.error(
                op,
                Some(id),
                "this process's previous run lease of the session is still being released",
            ));
        }
    }
}

impl Claim {
    /// Turns the claim into a held lease under `token`.
    pub(crate) fn hold(mut self, token: Uuid) -> RunLease {
        self.armed = false;
        if let Some(shared) = self.shared.upgrade() {
            shared
                .leases
                .slots()
                .insert(self.id.clone(), Slot::Held { token, lost: false });
        }
        RunLease::with_release(
            self.id.clone(),
            Held {
                shared: self.shared.clone(),
                id: self.id.clone(),
                token,
                armed: true,
            },
        )
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.armed
            && let Some(shared) = self.shared.upgrade()
        {
            let mut slots = shared.leases.slots();
            if matches!(slots.get(&self.id), Some(Slot::Claimed)) {
                slots.remove(&self.id);
            }
        }
    }
}

/// What a [`RunLease`] of this store carries: `release` deletes the row and
/// returns; a plain drop (or a `release` cut short) deletes it in the background.
struct Held {
    shared: Weak<Shared>,
    id: SessionId,
    token: Uuid,
    armed: bool,
}

#[async_trait]
impl LeaseRelease for Held {
    async fn release(self: Box<Self>) {
        let mut held = *self;
        let Some(shared) = held.shared.upgrade() else {
            held.armed = false;
            return;
        };
        // Until the row is gone the slot stays `Held`: this store's acquires of the
        // id answer `Busy`, as every other store's do.
        match shared.release(&held.id, held.token).await {
            Ok(()) => {
                held.armed = false;
                let mut slots = shared.leases.slots();
                if matches!(slots.get(&held.id), Some(Slot::Held { token, .. }) if *token == held.token) {
                    slots.remove(&held.id);
                }
            }
            Err(error) => {
                tracing::warn!(
                    session_id = %held.id, %error,
                    "releasing a run lease failed; retrying in the background (it expires by itself after the lease TTL)"
                );
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let notify = Arc::new(Notify::new());
        shared
            .leases
            .slots()
            .insert(self.id.clone(), Slot::Releasing(Arc::clone(&notify)));
        let id = self.id.clone();
        let token = self.token;
        let task_shared = Arc::clone(&shared);
        shared.runtime.spawn(async move {
            let shared = task_shared;
            if let Err(error) = shared.release(&id, token).await {
                tracing::warn!(
                    session_id = %id, %error,
                    "releasing a run lease failed; it expires by itself after the lease TTL"
                );
            }
            {
                let mut slots = shared.leases.slots();
                if matches!(slots.get(&id), Some(Slot::Releasing(n)) if Arc::ptr_eq(n, &notify)) {
                    slots.remove(&id);
                }
            }
            notify.notify_waiters();
        });
    }
}

/// Renews every lease the store holds, every third of the TTL, until the store is
/// gone.
pub(crate) async fn renew_forever(shared: Weak<Shared>) {
    let every = match shared.upgrade() {
        Some(shared) => shared.options.renew_every(),
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let held = shared.leases.held();
        if held.is_empty() {
            continue;
        }
        match shared.renew(&held).await {
            Ok(kept) => {
                for (id, token) in held.iter().filter(|(_, token)| !kept.contains(token)) {
                    tracing::error!(
                        session_id = %id,
                        "the run lease of this session was lost (it expired and another process took it); \
                         this process's further writes to it are refused"
                    );
                    shared.leases.mark_lost(id, *token);
                }
            }
            Err(error) => tracing::warn!(
                %error, leases = held.len(),
                "renewing run leases failed; they expire unless a later renewal succeeds"
            ),
        }
    }
}
