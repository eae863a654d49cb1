//! Download of a dataset split from the Hugging Face hub into the cache.
//!
//! The hub stores each split as one parquet file. We fetch it, decode the rows with the
//! parquet record API and write them as JSONL in exactly the bytes Python's `json.dumps`
//! (default options) gives, one row per line: that is the format of the reference files, so
//! the content sha256/md5 of a downloaded split equals that of the same rows from a file.

use bcb_envvars::EnvVars;
use std::path::Path;
use std::time::{Duration, Instant};

use bcb_http::{check_blocking, error_chain, retry_blocking, Failed, HttpError, RetryPolicy};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use reqwest::blocking::Client;
use reqwest::header::{HeaderValue, AUTHORIZATION};

use crate::{Dataset, DatasetError, Subset};

/// Parquet file of one split (split name = version) on the hub.
pub fn parquet_url(endpoint: &str, subset: Subset, version: &str) -> String {
    let repo = match subset {
        Subset::Full => "bigcode/bigcodebench",
        Subset::Hard => "bigcode/bigcodebench-hard",
    };
    format!(
        "{}/datasets/{repo}/resolve/main/data/{version}-00000-of-00001.parquet",
        endpoint.trim_end_matches('/')
    )
}

/// Further tries per download; only 5xx/408/429 answers and connection/timeout errors are
/// retried (see [`bcb_http::ErrorClass`]).
const RETRIES: usize = 2;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Whole request including the body: the full set's parquet is a few MB.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest wait we accept from a `Retry-After` header.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// Fetches `url` and writes the rows as JSONL to `dest` (atomically).
pub fn download_to(url: &str, dest: &Path) -> Result<(), DatasetError> {
    let started = Instant::now();
    let body = fetch(url, dest)?;
    let fetched = started.elapsed();
    let jsonl = parquet_to_jsonl(body).map_err(|message| {
        download_err(
            url,
            dest,
            format!("the file is not a readable dataset parquet: {message}"),
        )
    })?;
    // Refuse rows that would not load, before they reach the cache.
    Dataset::from_jsonl_bytes(&jsonl, Path::new(url), Subset::Full, "hub").map_err(|e| {
        download_err(
            url,
            dest,
            format!("the rows are not BigCodeBench tasks: {e}"),
        )
    })?;
    write_atomic(dest, &jsonl)?;
    tracing::info!(
        "downloaded {url} in {:.2}s, decoded to {} ({} bytes) in {:.2}s",
        fetched.as_secs_f64(),
        dest.display(),
        jsonl.len(),
        (started.elapsed() - fetched).as_secs_f64()
    );
    Ok(())
}

/// The token the hub client would use: `HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, then the token
/// file `huggingface-cli login` writes (`$HF_TOKEN_PATH`, `$HF_HOME/token`,
/// `~/.cache/huggingface/token`).
fn hub_token() -> Option<String> {
    let non_empty = |s: String| {
        let t = s.trim().to_string();
        (!t.is_empty()).then_some(t)
    };
    for var in [EnvVars::HF_TOKEN, EnvVars::HUGGING_FACE_HUB_TOKEN] {
        if let Some(t) = std::env::var(var).ok().and_then(non_empty) {
            return Some(t);
        }
    }
    let file = std::env::var_os(EnvVars::HF_TOKEN_PATH)
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os(EnvVars::HF_HOME).map(|h| Path::new(&h).join("token")))
        .or_else(|| dirs::cache_dir().map(|c| c.join("huggingface").join("token")))?;
    std::fs::read_to_string(file).ok().and_then(non_empty)
}

/// A download error that also says how to do without the hub.
fn download_err(url: &str, dest: &Path, message: String) -> DatasetError {
    DatasetError::Download {
        url: url.to_string(),
        message: format!(
            "{message}. To use a local copy instead, pass --dataset FILE, set BCB_DATASET_DIR \
             to a directory of bigcodebench[-hard]-VERSION.jsonl[.gz] files, or put the JSONL \
             at {} (add --offline to never try the hub)",
            dest.display()
        ),
    }
}

/// GETs `url` (following redirects, as the hub sends files from a CDN), with retries.
fn fetch(url: &str, dest: &Path) -> Result<bytes::Bytes, DatasetError> {
    let client = Client::builder()
        .user_agent(concat!("bcb/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| {
            download_err(
                url,
                dest,
                format!("cannot set up the HTTP client: {}", error_chain(&e)),
            )
        })?;
    let auth = match hub_token() {
        Some(token) => {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                download_err(
                    url,
                    dest,
                    "the hub token (HF_TOKEN) holds characters not allowed in an HTTP header"
                        .into(),
                )
            })?;
            // Keeps the token out of Debug output and HTTP/2 header tables.
            value.set_sensitive(true);
            Some(value)
        }
        None => None,
    };
    let policy = RetryPolicy {
        retries: RETRIES,
        first_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(5),
        max_server_wait: MAX_RETRY_WAIT,
    };
    let get = || {
        let mut request = client.get(url);
        if let Some(value) = &auth {
            request = request.header(AUTHORIZATION, value.clone());
        }
        let response = check_blocking(url, request.send())?;
        response
            .bytes()
            .map_err(|e| HttpError::from_reqwest(url, &e))
    };
    retry_blocking(&policy, get, |_| true, |_, _| {}).map_err(|failed| {
        let advice = failed.error.status().map_or("", status_advice);
        let attempts = Failed {
            error: failed.error.message(),
            attempts: failed.attempts,
        };
        download_err(url, dest, format!("{attempts}{advice}"))
    })
}

/// What an HTTP error status most likely means on the hub.
fn status_advice(status: u16) -> &'static str {
    match status {
        401 | 403 => {
            ": the hub refused access; if the dataset needs a login, set HF_TOKEN to a Hugging Face access token"
        }
        404 => ": no such file on the hub (is the dataset version right?)",
        500..=599 => ": the hub (or the mirror at --hub-endpoint/HF_ENDPOINT) is failing; try again later",
        _ => "",
    }
}

/// Decodes a parquet file of flat rows into JSONL bytes (see [`write_row`] for the format).
pub fn parquet_to_jsonl(parquet: bytes::Bytes) -> Result<Vec<u8>, String> {
    let reader = SerializedFileReader::new(parquet).map_err(|e| e.to_string())?;
    let rows = reader.metadata().file_metadata().num_rows();
    let mut out = Vec::with_capacity(1 << 20);
    let iter = reader.get_row_iter(None).map_err(|e| e.to_string())?;
    for (i, row) in iter.enumerate() {
        let row = row.map_err(|e| format!("row {i}: {e}"))?;
        write_row(&mut out, row.get_column_iter()).map_err(|e| format!("row {i}: {e}"))?;
    }
    if rows == 0 {
        return Err("the file holds no rows".into());
    }
    Ok(out)
}

/// Writes one row as Python's `json.dumps(row)` would, plus a newline: keys in column order,
/// `", "` and `": "` separators, non-ASCII as `\uXXXX`, floats as Python's `repr`.
fn write_row<'a>(
    out: &mut Vec<u8>,
    columns: impl Iterator<Item = (&'a String, &'a Field)>,
) -> Result<(), String> {
    out.push(b'{');
    for (i, (name, value)) in columns.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        bcb_pyjson::write_str(out, name);
        out.extend_from_slice(b": ");
        write_field(out, value).map_err(|e| format!("column `{name}`: {e}"))?;
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

fn write_field(out: &mut Vec<u8>, value: &Field) -> Result<(), String> {
    let int = |out: &mut Vec<u8>, v: i128| out.extend_from_slice(v.to_string().as_bytes());
    match value {
        Field::Null => out.extend_from_slice(b"null"),
        Field::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Field::Byte(v) => int(out, (*v).into()),
        Field::Short(v) => int(out, (*v).into()),
        Field::Int(v) => int(out, (*v).into()),
        Field::Long(v) => int(out, (*v).into()),
        Field::UByte(v) => int(out, (*v).into()),
        Field::UShort(v) => int(out, (*v).into()),
        Field::UInt(v) => int(out, (*v).into()),
        Field::ULong(v) => int(out, (*v).into()),
        // Python widens float32/float16 to a double before printing it.
        Field::Float16(v) => {
            out.extend_from_slice(bcb_pyjson::json_float(f64::from(*v)).as_bytes())
        }
        Field::Float(v) => out.extend_from_slice(bcb_pyjson::json_float(f64::from(*v)).as_bytes()),
        Field::Double(v) => out.extend_from_slice(bcb_pyjson::json_float(*v).as_bytes()),
        Field::Str(s) => bcb_pyjson::write_str(out, s),
        // A string column written without the UTF8 annotation.
        Field::Bytes(b) => match std::str::from_utf8(b.data()) {
            Ok(s) => bcb_pyjson::write_str(out, s),
            Err(e) => return Err(format!("binary value is not UTF-8 text ({e})")),
        },
        other => {
            return Err(format!(
                "unsupported value type ({other:?}); expected strings and numbers"
            ))
        }
    }
    Ok(())
}

/// Writes `dest` atomically (see [`bcb_pyjson::write_atomic`]).
fn write_atomic(dest: &Path, bytes: &[u8]) -> Result<(), DatasetError> {
    bcb_pyjson::write_atomic(dest, bytes).map_err(|source| DatasetError::Io {
        path: dest.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_rows_with_nulls_in_column_order() {
        use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message m { OPTIONAL BYTE_ARRAY task_id (UTF8); OPTIONAL BYTE_ARRAY note (UTF8);
             OPTIONAL INT64 n; OPTIONAL DOUBLE x; OPTIONAL BYTE_ARRAY s (UTF8); }",
        )
        .unwrap();
        let mut w =
            SerializedFileWriter::new(Vec::new(), schema.into(), Default::default()).unwrap();
        let mut g = w.next_row_group().unwrap();
        let mut col = g.next_column().unwrap().unwrap();
        let ids = [
            ByteArray::from("BigCodeBench/1"),
            ByteArray::from("BigCodeBench/2"),
        ];
        col.typed::<ByteArrayType>()
            .write_batch(&ids, Some(&[1, 1]), None)
            .unwrap();
        col.close().unwrap();
        // `note`: null in the first row only.
        let mut col = g.next_column().unwrap().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(&[ByteArray::from("ok")], Some(&[0, 1]), None)
            .unwrap();
        col.close().unwrap();
        let mut col = g.next_column().unwrap().unwrap();
        col.typed::<Int64Type>()
            .write_batch(&[-7, 8], Some(&[1, 1]), None)
            .unwrap();
        col.close().unwrap();
        let mut col = g.next_column().unwrap().unwrap();
        col.typed::<DoubleType>()
            .write_batch(&[0.1, 2.0], Some(&[1, 1]), None)
            .unwrap();
        col.close().unwrap();
        let mut col = g.next_column().unwrap().unwrap();
        let strs = [ByteArray::from("é\""), ByteArray::from("")];
        col.typed::<ByteArrayType>()
            .write_batch(&strs, Some(&[1, 1]), None)
            .unwrap();
        col.close().unwrap();
        g.close().unwrap();
        let file = w.into_inner().unwrap();
        let jsonl = parquet_to_jsonl(file.into()).unwrap();
        // First line: CPython's json.dumps of the same dict.
        assert_eq!(
            String::from_utf8(jsonl).unwrap(),
            "{\"task_id\": \"BigCodeBench/1\", \"note\": null, \"n\": -7, \"x\": 0.1, \"s\": \"\\u00e9\\\"\"}\n\
             {\"task_id\": \"BigCodeBench/2\", \"note\": \"ok\", \"n\": 8, \"x\": 2.0, \"s\": \"\"}\n"
        );
        assert!(parquet_to_jsonl(bytes::Bytes::from_static(b"PAR1 not really")).is_err());
    }
}
