//! Runs blocking file-system work off the executor, abandoning it on cancellation.

use engine_core::ToolError;
use engine_ports::CancellationToken;

/// Runs `work` on tokio's blocking pool. `work` gets a clone of `cancel` to check
/// between steps; once `cancel` fires this returns [`ToolError::Cancelled`] at once
/// and the closure's result, whenever it comes, is dropped. A panic inside `work` is
/// resumed here, so the dispatcher contains it like any tool panic (D2).
pub(crate) async fn run_blocking<T, F>(cancel: &CancellationToken, work: F) -> Result<T, ToolError>
where
    T: Send + 'static,
    F: FnOnce(&CancellationToken) -> T + Send + 'static,
{
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let token = cancel.clone();
    let handle = tokio::task::spawn_blocking(move || work(&token));
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ToolError::Cancelled),
        joined = handle => match joined {
            Ok(value) => Ok(value),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => Err(ToolError::Cancelled),
        },
    }
}
