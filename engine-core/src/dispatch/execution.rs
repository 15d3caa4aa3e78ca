//! The calls of a segment that the gate let through, run concurrently on the
//! dispatcher's own task: a [`Batch`] (one per turn, segment after segment; a lone
//! call is a segment of one) polls them together, each behind an [`Execution`]
//! handle that gives its value.
//!
//! No call gets a task of its own: a spawn, its join and the wake-up of the other
//! worker cost more than a fast tool's whole work, and every tool's blocking work
//! is already off the executor (file tools on the blocking pool, MCP calls on the
//! network). A panic is contained per call (D2), and a call past the cancellation
//! grace period is dropped where it is.
//!
//! The batch advances whenever the dispatcher's task is polled through it: while
//! the dispatcher waits for a call ([`Execution`]) and while it finishes an earlier
//! one ([`Batch::alongside`]: hooks, the audit record, `tool.result`). So a call
//! that is itself waiting on the dispatcher (on the event stream's order, say)
//! always gets to run, as it would on a task of its own.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::FutureExt as _;
use futures::future::{AbortHandle, Abortable, BoxFuture, Either};
use futures::stream::{FuturesUnordered, StreamExt as _};

/// Why an execution gave no value.
pub(super) enum Failed {
    /// The tool panicked; the payload.
    Panicked(Box<dyn Any + Send>),
    /// The call was stopped past the grace period (see [`Execution::abort`]).
    Aborted,
}

type Output<T> = Result<T, Failed>;

/// The running calls of one segment and what the finished ones gave.
pub(super) struct Batch<T> {
    inner: Mutex<Inner<T>>,
}

struct Inner<T> {
    running: FuturesUnordered<BoxFuture<'static, (usize, Output<T>)>>,
    /// Each call's value once it finished, until its handle takes it.
    done: Vec<Option<Output<T>>>,
    aborts: Vec<AbortHandle>,
}

/// One call of a [`Batch`]; awaiting it gives the work's value or why there is none.
pub(super) struct Execution<T> {
    batch: Arc<Batch<T>>,
    index: usize,
}

impl<T: Send + 'static> Batch<T> {
    /// An empty batch with room for `calls` calls. A batch may be started again
    /// once its calls are done (the dispatcher keeps one per turn, for segment after
    /// segment).
    pub(super) fn new(calls: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                running: FuturesUnordered::new(),
                done: Vec::with_capacity(calls),
                aborts: Vec::with_capacity(calls),
            }),
        })
    }

    /// Adds `work`; it first runs when the batch is next polled.
    pub(super) fn start(self: &Arc<Self>, work: impl Future<Output = T> + Send + 'static) -> Execution<T> {
        let (abort, registration) = AbortHandle::new_pair();
        let mut inner = self.lock();
        let index = inner.done.len();
        let work = Abortable::new(AssertUnwindSafe(work).catch_unwind(), registration);
        inner.running.push(Box::pin(async move {
            let output = match work.await {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(payload)) => Err(Failed::Panicked(payload)),
                Err(_aborted) => Err(Failed::Aborted),
            };
            (index, output)
        }));
        inner.done.push(None);
        inner.aborts.push(abort);
        Execution {
            batch: Arc::clone(self),
            index,
        }
    }

    /// Runs `fut` to its end while the batch's calls go on beside it. `fut` is
    /// pinned where the caller made it: a call's finish is large, and is not moved.
    pub(super) async fn alongside<F: Future>(&self, mut fut: Pin<&mut F>) -> F::Output {
        let driving = std::future::poll_fn(|cx| self.drive(cx));
        match futures::future::select(fut.as_mut(), std::pin::pin!(driving)).await {
            Either::Left((output, _)) => output,
            Either::Right(((), _)) => fut.await,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<T>> {
        // Only the dispatcher's task polls the batch: the lock is never contended.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Polls the calls that were woken; ready once none is running.
    fn drive(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut inner = self.lock();
        while let Poll::Ready(Some((index, output))) = inner.running.poll_next_unpin(cx) {
            inner.done[index] = Some(output);
        }
        if inner.running.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl<T: Send + 'static> Execution<T> {
    /// Stops the call where it is: its future is dropped at the batch's next poll.
    pub(super) fn abort(self) {
        self.batch.lock().aborts[self.index].abort();
    }
}

impl<T: Send + 'static> Future for Execution<T> {
    type Output = Output<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let _ = this.batch.drive(cx);
        match this.batch.lock().done[this.index].take() {
            Some(output) => Poll::Ready(output),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn each_call_gives_its_own_value() {
        let batch = Batch::new(2);
        let calls: Vec<_> = (0..4).map(|i| batch.start(async move { i * 10 })).collect();
        for (i, call) in calls.into_iter().enumerate().rev() {
            assert!(matches!(call.await, Ok(v) if v == i * 10));
        }
    }

    #[tokio::test]
    async fn a_batch_whose_calls_are_done_runs_the_next_ones() {
        let batch = Batch::new(1);
        let first = batch.start(async { 1 });
        assert!(matches!(first.await, Ok(1)));
        batch.alongside(std::pin::pin!(async {})).await;
        // Started after the first is done and taken: a new call of the same batch.
        let second = batch.start(async { 2 });
        let third = batch.start(async { 3 });
        assert!(matches!(third.await, Ok(3)));
        assert!(matches!(second.await, Ok(2)));
    }

    #[tokio::test]
    async fn a_panic_is_contained_with_its_payload_and_the_others_finish() {
        let batch = Batch::new(2);
        let panics = batch.start(async { panic!("boom") });
        let fine = batch.start(async { 7 });
        let Err(Failed::Panicked(payload)) = panics.await else {
            panic!("the panic was not contained as a panic");
        };
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
        assert!(matches!(fine.await, Ok(7)));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn work_runs_on_the_callers_task_only_when_polled() {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let batch = Batch::new(2);
        let execution = batch.start(async move { flag.store(true, Ordering::SeqCst) });
        tokio::task::yield_now().await;
        assert!(!ran.load(Ordering::SeqCst));
        assert!(execution.await.is_ok());
        assert!(ran.load(Ordering::SeqCst));
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_calls_of_a_batch_run_at_the_same_time() {
        let batch = Batch::new(2);
        let started = tokio::time::Instant::now();
        let calls: Vec<_> = (0..8)
            .map(|_| batch.start(tokio::time::sleep(std::time::Duration::from_secs(1))))
            .collect();
        for call in calls {
            assert!(call.await.is_ok());
        }
        assert_eq!(started.elapsed(), std::time::Duration::from_secs(1));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_others_go_on_while_the_caller_waits_on_something_else() {
        // The second call waits for the first to have finished being "finished" by
        // the caller; the caller's finishing waits for the second call's signal.
        let batch = Batch::new(2);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let first = batch.start(async {});
        let second = batch.start(async move {
            let _ = tx.send(());
        });
        assert!(first.await.is_ok());
        // Without `alongside`, nothing would poll the second call: this would hang.
        batch.alongside(std::pin::pin!(async { rx.await.unwrap() })).await;
        assert!(second.await.is_ok());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_aborted_call_is_dropped_and_gives_no_value() {
        struct Dropped(Arc<AtomicUsize>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = Dropped(Arc::clone(&drops));
        let batch = Batch::new(2);
        let stuck = batch.start(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        let other = batch.start(async {});
        let mut stuck = Box::pin(stuck);
        assert!(futures::poll!(stuck.as_mut()).is_pending());
        let index = stuck.index;
        batch.lock().aborts[index].abort();
        assert!(matches!(stuck.await, Err(Failed::Aborted)));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(other.await.is_ok());
    }
}
