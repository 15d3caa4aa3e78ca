//! One call's execution: on its own task (a batch of reads, so they run in parallel)
//! or inline in the dispatcher's task (a segment of one call: nothing runs beside it,
//! so it costs no spawn and no cross-thread wake-up). Either way a panic is contained
//! (D2) and cancellation past the grace period drops the work.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::FutureExt as _;
use tokio::task::JoinHandle;

/// Why an execution gave no value.
pub(super) enum Failed {
    /// The tool panicked; the payload.
    Panicked(Box<dyn Any + Send>),
    /// The task was cancelled by the runtime (it is shutting down).
    Aborted,
}

/// A started execution; awaiting it gives the work's value or why there is none.
pub(super) enum Execution<T> {
    Spawned(JoinHandle<T>),
    Inline(Pin<Box<dyn Future<Output = std::thread::Result<T>> + Send>>),
}

impl<T: Send + 'static> Execution<T> {
    /// Starts `work`: inline runs it only when the execution is polled.
    pub(super) fn start(work: impl Future<Output = T> + Send + 'static, inline: bool) -> Self {
        if inline {
            Self::Inline(Box::pin(AssertUnwindSafe(work).catch_unwind()))
        } else {
            Self::Spawned(tokio::spawn(work))
        }
    }

    /// Stops the work where it is: aborts its task, or drops the inline future.
    pub(super) fn abort(self) {
        if let Self::Spawned(handle) = self {
            handle.abort();
        }
    }
}

impl<T> Future for Execution<T> {
    type Output = Result<T, Failed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Spawned(handle) => Pin::new(handle).poll(cx).map(|joined| {
                joined.map_err(|error| {
                    if error.is_panic() {
                        Failed::Panicked(error.into_panic())
                    } else {
                        Failed::Aborted
                    }
                })
            }),
            Self::Inline(work) => work.as_mut().poll(cx).map(|done| done.map_err(Failed::Panicked)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn both_kinds_give_the_value() {
        for inline in [true, false] {
            assert!(matches!(Execution::start(async { 7 }, inline).await, Ok(7)));
        }
    }

    #[tokio::test]
    async fn both_kinds_contain_a_panic_with_its_payload() {
        for inline in [true, false] {
            let failed = Execution::start(async { panic!("boom") }, inline).await;
            let Err(Failed::Panicked(payload)) = failed else {
                panic!("inline={inline}: the panic was not contained as a panic");
            };
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn inline_work_runs_on_the_callers_task_only_when_polled() {
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&ran);
        let execution = Execution::start(
            async move { flag.store(true, std::sync::atomic::Ordering::SeqCst) },
            true,
        );
        tokio::task::yield_now().await;
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        assert!(execution.await.is_ok());
        assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
    }
}
