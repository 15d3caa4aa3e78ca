//! [`RootCache`]: an answer about a workspace root (its canonical form, whether it
//! is on a local disk) kept for a while, so a file tool's call does not work it out
//! again. Each `Parallel` branch has a root of its own, so once [`ROOTS_KEPT`] roots
//! are kept the stale answers are dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Roots kept before the stale answers are dropped.
const ROOTS_KEPT: usize = 64;

/// Answers per workspace root, each used for `refresh` after it was worked out.
pub(crate) struct RootCache<T> {
    refresh: Duration,
    answers: Mutex<HashMap<PathBuf, (Instant, T)>>,
}

impl<T: Clone> RootCache<T> {
    /// An empty cache whose answers are used for `refresh`.
    pub(crate) fn new(refresh: Duration) -> Self {
        Self {
            refresh,
            answers: Mutex::default(),
        }
    }

    /// The answer for `root` as of `now`: the one worked out in the last `refresh`,
    /// else `work_out`'s (run outside the lock; an error is not kept).
    pub(crate) fn get_or_work_out<E>(
        &self,
        root: &Path,
        now: Instant,
        work_out: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let fresh = |at: &Instant| now.saturating_duration_since(*at) < self.refresh;
        if let Some((at, answer)) = self.lock().get(root)
            && fresh(at)
        {
            return Ok(answer.clone());
        }
        let answer = work_out()?;
        let mut answers = self.lock();
        if answers.len() >= ROOTS_KEPT {
            answers.retain(|_, (at, _)| fresh(at));
        }
        answers.insert(root.to_owned(), (now, answer.clone()));
        Ok(answer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Instant, T)>> {
        self.answers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_answers_go_once_enough_roots_are_kept() {
        let cache = RootCache::new(Duration::from_secs(1));
        let start = Instant::now();
        for i in 0..ROOTS_KEPT {
            let _ = cache.get_or_work_out(Path::new(&format!("/r{i}")), start, || Ok::<_, ()>(i));
        }
        let later = start + Duration::from_secs(2);
        let _ = cache.get_or_work_out(Path::new("/new"), later, || Ok::<_, ()>(0));
        assert_eq!(cache.lock().len(), 1, "only the fresh answer is left");
    }
}
