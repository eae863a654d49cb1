//! The retry loop: exponential backoff with jitter, the server's `Retry-After` first.

use std::future::Future;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use bcb_envvars::EnvVars;

use crate::HttpError;

/// How often and how long to wait between tries of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Further tries after the first (0: no retry).
    pub retries: usize,
    /// The first wait; each next one doubles, up to `max_delay` (plus jitter).
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// The longest `Retry-After` we honour; a longer one is cut to this.
    pub max_server_wait: Duration,
}

impl RetryPolicy {
    /// `retries` further tries, the first after [`RetryPolicy::default_first_delay`], at most
    /// a minute apart, honouring a `Retry-After` of up to ten minutes.
    pub fn new(retries: usize) -> Self {
        RetryPolicy {
            retries,
            first_delay: Self::default_first_delay(),
            max_delay: Duration::from_secs(60),
            max_server_wait: Duration::from_secs(600),
        }
    }

    /// One second, or `BCB_RETRY_MIN_DELAY_MS` (tests shorten it).
    pub fn default_first_delay() -> Duration {
        std::env::var(EnvVars::BCB_RETRY_MIN_DELAY_MS)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(1))
    }

    fn schedule(&self) -> Schedule {
        Schedule {
            delays: ExponentialBuilder::default()
                .with_min_delay(self.first_delay)
                .with_max_delay(self.max_delay.max(self.first_delay))
                .with_factor(2.0)
                .with_jitter()
                .with_max_times(self.retries)
                .build(),
            max_server_wait: self.max_server_wait,
            retries: self.retries,
            attempts: 0,
        }
    }
}

/// An error the retry loop can judge.
pub trait Retryable: std::fmt::Display {
    /// Whether the same request may succeed if sent again.
    fn retryable(&self) -> bool;
    /// How long the server asked us to wait.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

impl Retryable for HttpError {
    fn retryable(&self) -> bool {
        self.class() == crate::ErrorClass::Retry
    }
    fn retry_after(&self) -> Option<Duration> {
        HttpError::retry_after(self)
    }
}

/// The last error of a request and how many times it was sent.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{error}{}", if *.attempts > 1 { format!(" (after {} attempts)", .attempts) } else { String::new() })]
pub struct Failed<E: std::fmt::Display> {
    pub error: E,
    pub attempts: usize,
}

struct Schedule {
    delays: ExponentialBackoff,
    max_server_wait: Duration,
    retries: usize,
    attempts: usize,
}

impl Schedule {
    /// The wait before the next try, or `None` to give up.
    fn next<E: Retryable>(&mut self, e: &E, keep_going: bool) -> Option<Duration> {
        if !keep_going || !e.retryable() {
            return None;
        }
        let ours = self.delays.next()?;
        let wait = match e.retry_after() {
            Some(server) => server.min(self.max_server_wait),
            None => ours,
        };
        tracing::warn!(
            "{e}; retrying in {:.1}s (try {} of {})",
            wait.as_secs_f64(),
            self.attempts + 1,
            self.retries + 1
        );
        Some(wait)
    }
}

/// Runs `op` until it succeeds, fails for good, `keep_going` says stop, or the policy's
/// retries are spent; `notify` hears each error that will be retried and the wait before it.
pub fn retry_blocking<T, E: Retryable>(
    policy: &RetryPolicy,
    mut op: impl FnMut() -> Result<T, E>,
    keep_going: impl Fn(&E) -> bool,
    notify: impl FnMut(&E, Duration),
) -> Result<T, Failed<E>> {
    let run = retry_loop(
        policy,
        || std::future::ready(op()),
        keep_going,
        notify,
        |wait| {
            std::thread::sleep(wait);
            std::future::ready(())
        },
    );
    run_ready(run)
}

/// Runs a future every await of which is ready when first polled (the blocking twins of the
/// async functions here): one poll runs it through.
fn run_ready<T>(run: impl Future<Output = T>) -> T {
    let mut run = std::pin::pin!(run);
    match run
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => unreachable!("a blocking call never waits on a waker"),
    }
}

/// [`retry_blocking`] for async requests (waits with tokio's timer).
pub async fn retry_async<T, E: Retryable, Fut: Future<Output = Result<T, E>>>(
    policy: &RetryPolicy,
    op: impl FnMut() -> Fut,
    keep_going: impl Fn(&E) -> bool,
    notify: impl FnMut(&E, Duration),
) -> Result<T, Failed<E>> {
    retry_loop(policy, op, keep_going, notify, tokio::time::sleep).await
}

/// The loop of [`retry_blocking`] and [`retry_async`]; `sleep` waits before a retry.
async fn retry_loop<T, E: Retryable, Fut: Future<Output = Result<T, E>>, S: Future<Output = ()>>(
    policy: &RetryPolicy,
    mut op: impl FnMut() -> Fut,
    keep_going: impl Fn(&E) -> bool,
    mut notify: impl FnMut(&E, Duration),
    sleep: impl Fn(Duration) -> S,
) -> Result<T, Failed<E>> {
    let mut schedule = policy.schedule();
    loop {
        schedule.attempts += 1;
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) => match schedule.next(&e, keep_going(&e)) {
                Some(wait) => {
                    notify(&e, wait);
                    sleep(wait).await;
                }
                None => {
                    return Err(Failed {
                        error: e,
                        attempts: schedule.attempts,
                    })
                }
            },
        }
    }
}

/// A sent blocking request as a success response or an [`HttpError`] (an error status is
/// read to its body for the message).
pub fn check_blocking(
    url: &str,
    sent: reqwest::Result<reqwest::blocking::Response>,
) -> Result<reqwest::blocking::Response, HttpError> {
    use reqwest::blocking::Response;
    run_ready(check_with(
        url,
        sent,
        Response::status,
        Response::headers,
        |r| std::future::ready(r.text().unwrap_or_default()),
    ))
}

/// [`check_blocking`] for async requests.
pub async fn check(
    url: &str,
    sent: reqwest::Result<reqwest::Response>,
) -> Result<reqwest::Response, HttpError> {
    use reqwest::Response;
    let body = |r: Response| async move { r.text().await.unwrap_or_default() };
    check_with(url, sent, Response::status, Response::headers, body).await
}

/// [`check`] over either kind of response: `body` reads an error's body.
async fn check_with<R, B: Future<Output = String>>(
    url: &str,
    sent: reqwest::Result<R>,
    status: fn(&R) -> reqwest::StatusCode,
    headers: fn(&R) -> &reqwest::header::HeaderMap,
    body: impl FnOnce(R) -> B,
) -> Result<R, HttpError> {
    let resp = sent.map_err(|e| HttpError::from_reqwest(url, &e))?;
    let code = status(&resp);
    if code.is_success() {
        return Ok(resp);
    }
    let headers = headers(&resp).clone();
    Err(HttpError::from_status(
        url,
        code,
        &headers,
        &body(resp).await,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn policy(retries: usize) -> RetryPolicy {
        RetryPolicy {
            retries,
            first_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
            max_server_wait: Duration::from_millis(20),
        }
    }

    fn err(status: u16, retry_after: Option<Duration>) -> HttpError {
        HttpError::Status {
            status,
            url: "http://x".into(),
            message: "m".into(),
            retry_after,
        }
    }

    #[test]
    fn retries_until_success_and_honours_retry_after_capped() {
        let calls = Cell::new(0);
        let mut waits = Vec::new();
        let out = retry_blocking(
            &policy(5),
            || {
                calls.set(calls.get() + 1);
                match calls.get() {
                    1 => Err(err(503, Some(Duration::from_millis(7)))),
                    2 => Err(err(429, Some(Duration::from_secs(99)))),
                    3 => Err(err(500, None)),
                    _ => Ok("ok"),
                }
            },
            |_| true,
            |_, d| waits.push(d),
        );
        assert_eq!(out.unwrap(), "ok");
        assert_eq!(waits[0], Duration::from_millis(7), "server's wait wins");
        assert_eq!(waits[1], Duration::from_millis(20), "capped");
        assert!(waits[2] <= Duration::from_millis(8), "{waits:?}");
    }

    #[test]
    fn gives_up_on_fatal_and_after_the_retries() {
        let fails = |retries, status, keep: bool| {
            retry_blocking(
                &policy(retries),
                || Err::<(), _>(err(status, None)),
                |_| keep,
                |_, _| {},
            )
            .unwrap_err()
        };
        let e = fails(5, 404, true);
        assert_eq!(e.attempts, 1);
        assert!(!e.to_string().contains("attempts"), "{e}");
        let e = fails(2, 502, true);
        assert_eq!(e.attempts, 3);
        assert!(e.to_string().ends_with("(after 3 attempts)"), "{e}");
        assert_eq!(fails(2, 502, false).attempts, 1, "keep_going=false stops");
    }

    #[tokio::test]
    async fn async_loop_is_the_same() {
        let calls = Cell::new(0);
        let out = retry_async(
            &policy(3),
            || {
                calls.set(calls.get() + 1);
                let n = calls.get();
                async move {
                    if n < 3 {
                        Err(err(500, None))
                    } else {
                        Ok(n)
                    }
                }
            },
            |_| true,
            |_, _| {},
        )
        .await;
        assert_eq!(out.unwrap(), 3);
    }
}
