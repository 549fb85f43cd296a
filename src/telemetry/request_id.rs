//! The id of the request being handled, for every log line written while it
//! runs: on its async task, and on the blocking threads it hands work to.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static TASK_ID: String;
}

thread_local! {
    static THREAD_ID: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The id of the request being handled here, if any.
pub fn current() -> Option<String> {
    TASK_ID
        .try_with(Clone::clone)
        .ok()
        .or_else(|| THREAD_ID.with(|id| id.borrow().clone()))
}

/// Runs `request` with `id` as the current request id.
pub async fn scope<F: Future>(id: String, request: F) -> F::Output {
    TASK_ID.scope(id, request).await
}

/// Runs `work` on this thread with `id` as the current request id.
pub fn on_this_thread<R>(id: Option<String>, work: impl FnOnce() -> R) -> R {
    THREAD_ID.with(|slot| *slot.borrow_mut() = id);
    let result = work();
    THREAD_ID.with(|slot| *slot.borrow_mut() = None);
    result
}
