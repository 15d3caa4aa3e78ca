//! Conformance suite for [`Clock`] implementations.

use std::sync::Arc;
use std::time::SystemTime;

use crate::clock::{Clock, elapsed_between};

/// Runs every clock case against fresh clocks from `make`.
///
/// # Panics
/// When a case fails; the message names the case.
pub fn run<C: Clock + 'static>(make: impl Fn() -> C) {
    reads_do_not_go_backwards(make());
    reads_are_after_the_unix_epoch(make());
    usable_as_shared_trait_object(make());
}

fn reads_do_not_go_backwards(clock: impl Clock) {
    let mut previous = clock.now();
    for _ in 0..1_000 {
        let next = clock.now();
        assert!(
            next >= previous,
            "clock::reads_do_not_go_backwards: {next:?} came after {previous:?}"
        );
        assert_eq!(
            elapsed_between(next, previous),
            std::time::Duration::ZERO,
            "clock::reads_do_not_go_backwards: a backwards duration must saturate at zero"
        );
        previous = next;
    }
}

fn reads_are_after_the_unix_epoch(clock: impl Clock) {
    assert!(
        clock.now() > SystemTime::UNIX_EPOCH,
        "clock::reads_are_after_the_unix_epoch"
    );
}

fn usable_as_shared_trait_object<C: Clock + 'static>(clock: C) {
    let shared: Arc<dyn Clock> = Arc::new(clock);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let clock = Arc::clone(&shared);
            std::thread::spawn(move || clock.now())
        })
        .collect();
    for handle in handles {
        let read = handle.join();
        assert!(
            read.is_ok(),
            "clock::usable_as_shared_trait_object: a read from another thread panicked"
        );
    }
}
