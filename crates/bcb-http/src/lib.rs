//! The one HTTP layer every bcb client shares (the dataset hub, the generation providers, the
//! Gradio and E2B executors): a request's failure as a classified [`HttpError`], the
//! `Retry-After` header read in [`parse_retry_after`], an error's causes printed by
//! [`error_chain`], response bodies cut for messages by [`excerpt`], and the retry loop
//! ([`retry_blocking`] and [`retry_async`]) with exponential backoff and jitter (`backon`)
//! in which the server's `Retry-After` wins over our own schedule.
//!
//! It sits low in the crate order (it needs only `reqwest`, `backon` and `bcb-envvars`), so
//! any crate that talks HTTP can depend on it without a cycle.

mod error;
mod retry;

pub use error::{body_message, error_chain, excerpt, parse_retry_after, ErrorClass, HttpError};
pub use retry::{
    check, check_blocking, retry_async, retry_blocking, Failed, RetryPolicy, Retryable,
};
