//! The one place requests go out: JSON POST with status/timeout classification.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{parse_retry_after, ApiError};

#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

impl Http {
    pub fn new(timeout: Duration, max_connections: usize) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(30).min(timeout))
            .pool_max_idle_per_host(max_connections.max(1))
            .user_agent(concat!("bcb/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Http { client })
    }

    /// Sends `body` and returns the response if its status is a success.
    pub async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, ApiError> {
        let resp = self
            .client
            .post(url)
            .headers(headers)
            .json(body)
            .send()
            .await
            .map_err(|e| ApiError::from_reqwest(url, &e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = parse_retry_after(resp.headers());
        let text = resp.text().await.unwrap_or_default();
        Err(ApiError::Status {
            status: status.as_u16(),
            url: url.to_string(),
            message: error_message(&text),
            retry_after,
        })
    }

    pub async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<Value, ApiError> {
        let resp = self.post(url, headers, body).await?;
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| ApiError::from_reqwest(url, &e))?;
        serde_json::from_slice(&bytes).map_err(|e| ApiError::Protocol {
            url: url.to_string(),
            message: format!(
                "not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ),
        })
    }
}

/// The `error.message` of the usual JSON error bodies, else the start of the body.
fn error_message(text: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
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
    if text.trim().is_empty() {
        "(empty body)".into()
    } else {
        excerpt(text)
    }
}

pub fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    let s = s.trim();
    if s.len() <= MAX {
        s.to_string()
    } else {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

/// A header value from a secret; marked sensitive so it never shows in debug output.
pub fn secret_header(value: &str) -> reqwest::header::HeaderValue {
    let mut v = reqwest::header::HeaderValue::from_str(value)
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static("invalid-key"));
    v.set_sensitive(true);
    v
}
