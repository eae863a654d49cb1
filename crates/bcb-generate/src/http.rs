//! The one place requests go out: JSON POST with status/timeout classification.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

pub use bcb_http::excerpt;

use crate::error::ApiError;

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
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .json(body)
            .send()
            .await;
        bcb_http::check(url, sent).await
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

/// A header value from a secret; marked sensitive so it never shows in debug output.
pub fn secret_header(value: &str) -> reqwest::header::HeaderValue {
    let mut v = reqwest::header::HeaderValue::from_str(value)
        .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static("invalid-key"));
    v.set_sensitive(true);
    v
}
