//! [`ManualClock`]: a clock that moves only when told to.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::clock::Clock;

/// A clock fixed at a time until [`ManualClock::advance`] or [`ManualClock::set`].
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<SystemTime>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: SystemTime) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// A clock at 2026-01-01T00:00:00Z.
    pub fn at_epoch_2026() -> Self {
        Self::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *now += by;
    }

    /// Sets the clock.
    pub fn set(&self, to: SystemTime) {
        *self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
