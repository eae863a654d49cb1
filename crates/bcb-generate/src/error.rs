//! Request errors, classified for retrying.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    /// The server answered with an error status.
    #[error("HTTP {status} from {url}: {message}")]
    Status {
        status: u16,
        url: String,
        message: String,
        retry_after: Option<Duration>,
    },
    /// Connecting, sending or receiving failed (reset, refused, timeout, truncated body).
    #[error("{kind} talking to {url}: {message}")]
    Transport {
        kind: &'static str,
        url: String,
        message: String,
    },
    /// The answer was not what the API documents (bad JSON, missing fields).
    #[error("unexpected answer from {url}: {message}")]
    Protocol { url: String, message: String },
}

/// What to do after an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Try the same request again after a delay.
    Retry,
    /// This request cannot succeed; others may (e.g. 400 for an over-long prompt).
    FailRequest,
    /// No request can succeed (bad key, unknown model or URL): stop the run now.
    Fatal,
}

impl ApiError {
    pub fn class(&self) -> ErrorClass {
        match self {
            ApiError::Status { status, .. } => match status {
                401 | 403 | 404 => ErrorClass::Fatal,
                408 | 409 | 425 | 429 => ErrorClass::Retry,
                500..=599 => ErrorClass::Retry,
                _ => ErrorClass::FailRequest,
            },
            ApiError::Transport { .. } => ErrorClass::Retry,
            // Usually a truncated or garbled body from an overloaded proxy.
            ApiError::Protocol { .. } => ErrorClass::Retry,
        }
    }

    /// The URL when this is a failure to connect at all (refused, unknown host, connect
    /// timeout), as opposed to an error the server answered with.
    pub fn connection_failure_url(&self) -> Option<&str> {
        match self {
            ApiError::Transport { kind, url, .. } if *kind == "connection failure" => Some(url),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn from_reqwest(url: &str, e: &reqwest::Error) -> Self {
        let kind = if e.is_timeout() {
            "timeout"
        } else if e.is_connect() {
            "connection failure"
        } else if e.is_body() || e.is_decode() {
            "broken response body"
        } else {
            "network error"
        };
        // reqwest's Display stops at the outer error; the cause says "connection reset" etc.
        let mut message = e.to_string();
        let mut src = std::error::Error::source(e);
        while let Some(s) = src {
            message.push_str(": ");
            message.push_str(&s.to_string());
            src = s.source();
        }
        ApiError::Transport {
            kind,
            url: url.to_string(),
            message,
        }
    }
}

/// `Retry-After` as seconds or an HTTP date; also the OpenAI-style `retry-after-ms`.
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.max(0.0)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: u16) -> ApiError {
        ApiError::Status {
            status: s,
            url: "u".into(),
            message: "m".into(),
            retry_after: None,
        }
    }

    #[test]
    fn classification() {
        assert_eq!(status(429).class(), ErrorClass::Retry);
        assert_eq!(status(500).class(), ErrorClass::Retry);
        assert_eq!(status(503).class(), ErrorClass::Retry);
        assert_eq!(status(400).class(), ErrorClass::FailRequest);
        assert_eq!(status(401).class(), ErrorClass::Fatal);
        assert_eq!(status(404).class(), ErrorClass::Fatal);
    }

    #[test]
    fn retry_after_forms() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = reqwest::header::HeaderMap::new();
        let later = std::time::SystemTime::now() + Duration::from_secs(30);
        h.insert(
            "retry-after",
            httpdate::fmt_http_date(later).parse().unwrap(),
        );
        let d = parse_retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
    }
}
