//! A failed request, classified for retrying, and the texts that describe it.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

/// Why a request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum HttpError {
    /// The server answered with an error status.
    #[error("HTTP {status} from {url}: {message}")]
    Status {
        status: u16,
        url: String,
        /// What the body (or the hub's `x-error-message` header) says, cut by [`excerpt`].
        message: String,
        /// The server's `Retry-After` (see [`parse_retry_after`]).
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
    /// No request can succeed (bad key, unknown model or URL): stop now.
    Fatal,
}

impl HttpError {
    pub fn class(&self) -> ErrorClass {
        match self {
            HttpError::Status { status, .. } => match status {
                401 | 403 | 404 => ErrorClass::Fatal,
                408 | 409 | 425 | 429 => ErrorClass::Retry,
                500..=599 => ErrorClass::Retry,
                _ => ErrorClass::FailRequest,
            },
            HttpError::Transport { .. } => ErrorClass::Retry,
            // Usually a truncated or garbled body from an overloaded proxy.
            HttpError::Protocol { .. } => ErrorClass::Retry,
        }
    }

    /// The URL when this is a failure to connect at all (refused, unknown host, connect
    /// timeout), as opposed to an error the server answered with.
    pub fn connection_failure_url(&self) -> Option<&str> {
        match self {
            HttpError::Transport { kind, url, .. } if *kind == "connection failure" => Some(url),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            HttpError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The error's own text without the URL (for messages that name the URL already).
    pub fn message(&self) -> String {
        match self {
            HttpError::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            HttpError::Transport { kind, message, .. } => format!("{kind}: {message}"),
            HttpError::Protocol { message, .. } => format!("unexpected answer: {message}"),
        }
    }

    /// A transport failure, its causes included.
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
        // Our message names the URL already; reqwest's would repeat it.
        let e = clone_without_url(e);
        HttpError::Transport {
            kind,
            url: url.to_string(),
            message: error_chain(&e),
        }
    }

    /// An error status with its headers and body.
    pub fn from_status(
        url: &str,
        status: reqwest::StatusCode,
        headers: &HeaderMap,
        body: &str,
    ) -> Self {
        HttpError::Status {
            status: status.as_u16(),
            url: url.to_string(),
            message: body_message(headers, body),
            retry_after: parse_retry_after(headers),
        }
    }
}

/// `reqwest::Error` is not `Clone`; its text without the URL is what we keep.
fn clone_without_url(e: &reqwest::Error) -> ChainText {
    let mut parts = Vec::new();
    let mut first = e.to_string();
    if let Some(url) = e.url() {
        first = first.replace(&format!(" for url ({url})"), "");
        first = first.replace(&format!(" ({url})"), "");
    }
    parts.push(first);
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        parts.push(s.to_string());
        src = s.source();
    }
    ChainText(parts)
}

/// An error chain as texts, so [`error_chain`] prints it like any other.
#[derive(Debug)]
struct ChainText(Vec<String>);

impl std::fmt::Display for ChainText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join(": "))
    }
}

impl std::error::Error for ChainText {}

/// An error with its causes, `outer: cause: root cause`, each cause left out when the text
/// so far already says it (reqwest's own text alone is often just "error sending request").
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// What an error response says: the hub's `x-error-message` header, the `error.message` (or
/// `error`, `message`, `detail`) of the usual JSON error bodies, else the start of the body.
pub fn body_message(headers: &HeaderMap, body: &str) -> String {
    if let Some(m) = headers
        .get("x-error-message")
        .and_then(|v| v.to_str().ok())
        .filter(|m| !m.trim().is_empty())
    {
        return excerpt(m);
    }
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let msg = v
            .pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"));
        if let Some(m) = msg {
            return match m {
                Value::String(s) => excerpt(s),
                other => excerpt(&other.to_string()),
            };
        }
    }
    if body.trim().is_empty() {
        "(empty body)".into()
    } else {
        excerpt(body)
    }
}

/// Longest excerpt of a body or value in a message, in characters.
const EXCERPT_CHARS: usize = 300;

/// `s` trimmed and cut to [`EXCERPT_CHARS`] characters (then `…`), for error messages.
pub fn excerpt(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(EXCERPT_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// `Retry-After` as seconds or an HTTP date; also the OpenAI-style `retry-after-ms`.
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite())
    {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = v.parse::<f64>() {
        return secs
            .is_finite()
            .then(|| Duration::from_secs_f64(secs.clamp(0.0, 1e9)));
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

    fn status(s: u16) -> HttpError {
        HttpError::Status {
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
        let mut h = HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
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
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(parse_retry_after(&h), None);
    }

    #[test]
    fn body_messages_and_excerpts() {
        let h = HeaderMap::new();
        assert_eq!(
            body_message(&h, r#"{"error": {"message": "too long"}}"#),
            "too long"
        );
        assert_eq!(body_message(&h, r#"{"detail": "nope"}"#), "nope");
        assert_eq!(body_message(&h, "  "), "(empty body)");
        let mut hub = HeaderMap::new();
        hub.insert("x-error-message", "Entry not found".parse().unwrap());
        assert_eq!(body_message(&hub, "<html>"), "Entry not found");
        let long = "é".repeat(400);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn chains_leave_out_what_is_said_already() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let e = E(
            "error sending request",
            Some(Box::new(E(
                "connection refused",
                Some(Box::new(E("refused", None))),
            ))),
        );
        assert_eq!(error_chain(&e), "error sending request: connection refused");
    }
}
