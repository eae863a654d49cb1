//! How each endpoint answers a request it cannot take now (the queue full, the server
//! starting or draining, an executor fault): with the status its known clients retry, after
//! holding the request for room in the queue as long as those clients wait, so a shed request
//! is retried and never scored. The rule per endpoint is in `docs/rl-rewards.md`.

use std::time::Duration;

use axum::http::StatusCode;

use crate::error::ApiError;

/// The clients an endpoint serves, by their retry rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clients {
    /// `/v1/evaluate`: bcb's own client (`examples/rl/bcb_client.py`) retries 429 and 503
    /// after `Retry-After`, so a full queue answers at once.
    Native,
    /// `/openrlhf`: OpenRLHF retries any error five times, 1 s apart, each try with a 180-s
    /// read timeout; a shed request is held for room first.
    OpenRlhf,
    /// `/submit`: the `sandbox-fusion` client retries any non-200 answer five times with
    /// exponential backoff (about 1, 2, 4, 8 s), then `submit` raises and `submit_safe`
    /// scores the answer rejected; a shed request is held for room first.
    Fusion,
    /// `/run_code`: verl retries 504 only (three tries, 1 s then 2 s apart) and scores any
    /// other error as a failed case; the `sandbox-fusion` client retries any non-200. So
    /// every "retry later" is a 504, answered before verl's read timeout.
    RunCode,
}

/// How long `/openrlhf` and `/submit` hold a request for room in a full queue: OpenRLHF's
/// read timeout (180 s) less a minute for the run.
const HOLD: Duration = Duration::from_secs(120);

impl Clients {
    /// How long a request of these clients waits for room in a full queue before it is
    /// answered shed. `/run_code` computes its own from the request (`runcode.rs`).
    pub fn hold(self) -> Duration {
        match self {
            Clients::Native | Clients::RunCode => Duration::ZERO,
            Clients::OpenRlhf | Clients::Fusion => HOLD,
        }
    }

    /// The answer these clients get for `e`: a "retry later" error (429, 503) in the status
    /// they retry; any other error as it is.
    pub fn answer(self, mut e: ApiError) -> ApiError {
        let retry_later = matches!(
            e.status,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
        );
        if retry_later && self == Clients::RunCode {
            e.status = StatusCode::GATEWAY_TIMEOUT;
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_run_code_moves_retry_later_to_504() {
        let busy = || {
            let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "queue full");
            e.retry_after = Some(1);
            e
        };
        assert_eq!(
            Clients::RunCode.answer(busy()).status,
            StatusCode::GATEWAY_TIMEOUT
        );
        let down = ApiError::unavailable("draining", 1);
        assert_eq!(
            Clients::RunCode.answer(down).status,
            StatusCode::GATEWAY_TIMEOUT
        );
        for c in [Clients::Native, Clients::OpenRlhf, Clients::Fusion] {
            assert_eq!(c.answer(busy()).status, StatusCode::TOO_MANY_REQUESTS);
        }
        let bad = ApiError::bad_request("field `code`");
        assert_eq!(Clients::RunCode.answer(bad).status, StatusCode::BAD_REQUEST);
    }
}
