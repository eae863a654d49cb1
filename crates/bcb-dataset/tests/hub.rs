//! Hub download against a loopback HTTP server that serves parquet files built here from the
//! real dataset rows (`$BCB_DATASET_DIR`), at the hub's own paths, with the hub's redirect to
//! a CDN path. The server is a stand-in for huggingface.co (unreachable here); the parquet
//! files, the HTTP client, the decoder and the cache are the real ones.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output: what ran, what was skipped

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use bcb_dataset::{parquet_url, Dataset, DatasetSpec, Source, Subset};
use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use sha2::Digest;

const HARD_V014_SHA256: &str = "af4fed119f71fca6dda51251c294bf566f6ba6c394ee14525152a1a319eab432";
const FULL_V014_SHA256: &str = "0a02220ab46eb02034d8e58f69fa1ac926f7e9a2b62a69c5c3a179a26edd6491";

// ---------------------------------------------------------------- real rows and fixtures

/// The shared dataset directory, or None (test skipped) when it is not configured.
fn data_dir() -> Option<PathBuf> {
    bcb_testkit::dataset_dir()
}

/// The uncompressed JSONL of a shared file, e.g. `bigcodebench-hard-v0.1.4`.
fn shared_jsonl(dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(format!("{name}.jsonl.gz"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// A parquet file holding the JSONL rows, typed as on the hub: strings, plus int64 and
/// float64 where the rows hold integers and floats (the hard subset's q_idx and score).
/// Several row groups, snappy pages and dictionary encoding, as pyarrow writes by default.
fn parquet_from_jsonl(jsonl: &[u8]) -> Vec<u8> {
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = jsonl
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let columns: Vec<(String, &'static str)> = rows[0]
        .iter()
        .map(|(name, v)| {
            let ty = match v {
                serde_json::Value::String(_) => "BYTE_ARRAY",
                serde_json::Value::Number(n) if n.is_i64() => "INT64",
                serde_json::Value::Number(_) => "DOUBLE",
                other => panic!("fixture: unexpected value {other}"),
            };
            (name.clone(), ty)
        })
        .collect();
    let fields: String = columns
        .iter()
        .map(|(name, ty)| match *ty {
            "BYTE_ARRAY" => format!("OPTIONAL BYTE_ARRAY {name} (UTF8);\n"),
            ty => format!("OPTIONAL {ty} {name};\n"),
        })
        .collect();
    let schema = Arc::new(
        parquet::schema::parser::parse_message_type(&format!("message schema {{\n{fields}}}"))
            .unwrap(),
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build(),
    );
    let mut writer = SerializedFileWriter::new(Vec::new(), schema, props).unwrap();
    for chunk in rows.chunks(100) {
        let mut group = writer.next_row_group().unwrap();
        for (name, ty) in &columns {
            let mut col = group.next_column().unwrap().unwrap();
            let defs = vec![1i16; chunk.len()];
            match *ty {
                "BYTE_ARRAY" => {
                    let v: Vec<ByteArray> = chunk
                        .iter()
                        .map(|r| ByteArray::from(r[name].as_str().unwrap()))
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&v, Some(&defs), None)
                        .unwrap();
                }
                "INT64" => {
                    let v: Vec<i64> = chunk.iter().map(|r| r[name].as_i64().unwrap()).collect();
                    col.typed::<Int64Type>()
                        .write_batch(&v, Some(&defs), None)
                        .unwrap();
                }
                _ => {
                    let v: Vec<f64> = chunk.iter().map(|r| r[name].as_f64().unwrap()).collect();
                    col.typed::<DoubleType>()
                        .write_batch(&v, Some(&defs), None)
                        .unwrap();
                }
            }
            col.close().unwrap();
        }
        group.close().unwrap();
    }
    writer.into_inner().unwrap()
}

/// (jsonl, parquet) of a shared file.
type Fixture = Arc<(Vec<u8>, Vec<u8>)>;

/// The fixture of a shared file, built once per test process.
fn fixture(dir: &Path, name: &'static str) -> Fixture {
    static CACHE: OnceLock<Mutex<HashMap<&'static str, Fixture>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache
        .entry(name)
        .or_insert_with(|| {
            let jsonl = shared_jsonl(dir, name);
            let started = Instant::now();
            let parquet = parquet_from_jsonl(&jsonl);
            eprintln!(
                "fixture {name}: {} bytes JSONL -> {} bytes parquet in {:.2}s",
                jsonl.len(),
                parquet.len(),
                started.elapsed().as_secs_f64()
            );
            Arc::new((jsonl, parquet))
        })
        .clone()
}

// ---------------------------------------------------------------- loopback hub

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
}

#[derive(Default)]
struct Routes {
    /// Served at `/cdn/<n>` after a 302 from the hub path, as the real hub does.
    files: HashMap<String, Fixture>,
    raw: HashMap<String, Vec<u8>>,
    /// Statuses answered (in order) before the path is served normally.
    failures: HashMap<String, VecDeque<u16>>,
    /// Another server's address to redirect to, as the hub's CDN is another host.
    cdn: Option<String>,
    seen: Vec<Seen>,
}

struct Hub {
    endpoint: String,
    server: Arc<tiny_http::Server>,
    routes: Arc<Mutex<Routes>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hub {
    fn start() -> Hub {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let routes = Arc::new(Mutex::new(Routes::default()));
        let (srv, rts) = (server.clone(), routes.clone());
        let thread = std::thread::spawn(move || {
            for request in srv.incoming_requests() {
                let path = request.url().to_string();
                let authorization = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Authorization"))
                    .map(|h| h.value.to_string());
                let response = {
                    let mut r = rts.lock().unwrap();
                    r.seen.push(Seen {
                        path: path.clone(),
                        authorization,
                    });
                    answer(&mut r, &path)
                };
                let _ = request.respond(response);
            }
        });
        Hub {
            endpoint: format!("http://127.0.0.1:{port}"),
            server,
            routes,
            thread: Some(thread),
        }
    }

    fn serve(&self, subset: Subset, version: &str, fixture: Fixture) {
        let path = hub_path(&self.endpoint, subset, version);
        self.routes.lock().unwrap().files.insert(path, fixture);
    }

    fn serve_raw(&self, subset: Subset, version: &str, body: &[u8]) {
        let path = hub_path(&self.endpoint, subset, version);
        self.routes.lock().unwrap().raw.insert(path, body.to_vec());
    }

    fn fail_first(&self, subset: Subset, version: &str, statuses: &[u16]) {
        let path = hub_path(&self.endpoint, subset, version);
        self.routes
            .lock()
            .unwrap()
            .failures
            .insert(path, statuses.iter().copied().collect());
    }

    fn redirect_to(&self, other: &Hub) {
        self.routes.lock().unwrap().cdn = Some(other.endpoint.clone());
    }

    fn seen(&self) -> Vec<Seen> {
        self.routes.lock().unwrap().seen.clone()
    }

    fn spec(&self, subset: Subset, cache: &Path) -> DatasetSpec {
        DatasetSpec {
            subset,
            version: "v0.1.4".into(),
            path: None,
            dataset_dir: None,
            cache_dir: cache.to_path_buf(),
            offline: false,
            hub_endpoint: self.endpoint.clone(),
            // These tests are about the hub: never the copy built into the binary.
            embedded: false,
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn hub_path(endpoint: &str, subset: Subset, version: &str) -> String {
    parquet_url(endpoint, subset, version)[endpoint.len()..].to_string()
}

type Reply = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn answer(r: &mut Routes, path: &str) -> Reply {
    let header = |k: &str, v: &str| tiny_http::Header::from_bytes(k, v).unwrap();
    if let Some(status) = r.failures.get_mut(path).and_then(|q| q.pop_front()) {
        return tiny_http::Response::from_data(b"upstream trouble".to_vec())
            .with_status_code(status);
    }
    if let Some(body) = r.raw.get(path) {
        return tiny_http::Response::from_data(body.clone());
    }
    if r.files.contains_key(path) {
        // The hub answers `resolve/` with a redirect to its CDN.
        let n = r.files.keys().position(|k| k == path).unwrap();
        let cdn = format!("{}/cdn/{n}?sig=abc", r.cdn.as_deref().unwrap_or(""));
        return tiny_http::Response::from_data(Vec::new())
            .with_status_code(302)
            .with_header(header("Location", &cdn));
    }
    if let Some(n) = path
        .strip_prefix("/cdn/")
        .and_then(|rest| rest.split('?').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        if let Some(fixture) = r.files.values().nth(n) {
            return tiny_http::Response::from_data(fixture.1.clone())
                .with_header(header("Content-Type", "application/octet-stream"));
        }
    }
    tiny_http::Response::from_data(b"Entry not found".to_vec())
        .with_status_code(404)
        .with_header(header("X-Error-Code", "EntryNotFound"))
        .with_header(header("X-Error-Message", "Entry not found"))
}

/// Every test reads the process environment (HF_TOKEN) during a download and one sets it:
/// they run one at a time so no test sees another's token or races `set_var`.
fn env_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Files other than the cache file itself (a temp file left behind would show up here).
fn stray_files(dir: &Path, keep: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p != keep)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A hub serving the shared v0.1.4 file of `subset` (checked against its known digest), and
/// the spec of a load from it into a fresh cache (kept alive by the returned dir).
fn hub_of_shared_v014(
    dir: &Path,
    subset: Subset,
) -> (Hub, Fixture, tempfile::TempDir, DatasetSpec) {
    let (name, sha) = match subset {
        Subset::Hard => ("bigcodebench-hard-v0.1.4", HARD_V014_SHA256),
        Subset::Full => ("bigcodebench-v0.1.4", FULL_V014_SHA256),
    };
    let fx = fixture(dir, name);
    assert_eq!(sha256_hex(&fx.0), sha, "shared file changed?");
    let hub = Hub::start();
    hub.serve(subset, "v0.1.4", fx.clone());
    let cache = tempfile::tempdir().unwrap();
    let spec = hub.spec(subset, cache.path());
    (hub, fx, cache, spec)
}

// ---------------------------------------------------------------- tests

#[test]
fn hard_v014_from_hub_matches_shared_file_then_comes_from_cache() {
    let _env = env_lock();
    let Some(dir) = data_dir() else { return };
    let (hub, fx, cache, spec) = hub_of_shared_v014(&dir, Subset::Hard);

    assert!(matches!(spec.resolve().unwrap(), Source::Hub { .. }));
    let ds = spec.load().unwrap();
    assert_eq!(ds.sha256, HARD_V014_SHA256);
    assert_eq!(
        std::fs::read(spec.cache_path()).unwrap(),
        fx.0,
        "cache file bytes"
    );
    let reference = Dataset::from_file(
        &dir.join("bigcodebench-hard-v0.1.4.jsonl.gz"),
        Subset::Hard,
        "v0.1.4",
    )
    .unwrap();
    assert_eq!(ds.len(), 148);
    assert_eq!(ds.tasks(), reference.tasks());
    assert_eq!(ds.md5, reference.md5);
    assert!(stray_files(cache.path(), &spec.cache_path()).is_empty());
    let seen = hub.seen();
    assert_eq!(seen.len(), 2, "resolve + CDN redirect: {seen:?}");
    assert!(seen[0]
        .path
        .ends_with("/resolve/main/data/v0.1.4-00000-of-00001.parquet"));
    assert!(seen[0]
        .path
        .starts_with("/datasets/bigcode/bigcodebench-hard/"));

    // Second load: straight from the cache, no request.
    assert!(matches!(spec.resolve().unwrap(), Source::Cache(_)));
    let again = spec.load().unwrap();
    assert_eq!(again.sha256, HARD_V014_SHA256);
    assert_eq!(hub.seen().len(), 2, "second load must not touch the hub");
}

#[test]
fn full_v014_from_hub_matches_shared_file() {
    let _env = env_lock();
    let Some(dir) = data_dir() else { return };
    let (hub, fx, _cache, spec) = hub_of_shared_v014(&dir, Subset::Full);
    let started = Instant::now();
    let ds = spec.load().unwrap();
    eprintln!(
        "full v0.1.4: {} bytes parquet downloaded and decoded in {:.2}s",
        fx.1.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(ds.len(), 1140);
    assert_eq!(ds.sha256, FULL_V014_SHA256);
    assert!(hub.seen()[0]
        .path
        .starts_with("/datasets/bigcode/bigcodebench/resolve/"));
}

#[test]
fn retries_after_server_errors() {
    let _env = env_lock();
    let Some(dir) = data_dir() else { return };
    let hub = Hub::start();
    hub.serve(
        Subset::Hard,
        "v0.1.4",
        fixture(&dir, "bigcodebench-hard-v0.1.4"),
    );
    hub.fail_first(Subset::Hard, "v0.1.4", &[500, 503]);
    let cache = tempfile::tempdir().unwrap();
    let ds = hub.spec(Subset::Hard, cache.path()).load().unwrap();
    assert_eq!(ds.sha256, HARD_V014_SHA256);
    let hub_path = hub_path(&hub.endpoint, Subset::Hard, "v0.1.4");
    let tries = hub.seen().iter().filter(|s| s.path == hub_path).count();
    assert_eq!(tries, 3, "two failures then the redirect");
}

#[test]
fn gives_up_after_three_server_errors_and_caches_nothing() {
    let _env = env_lock();
    let hub = Hub::start();
    hub.serve_raw(Subset::Hard, "v0.1.4", b"never reached");
    hub.fail_first(Subset::Hard, "v0.1.4", &[502, 502, 502, 502]);
    let cache = tempfile::tempdir().unwrap();
    let spec = hub.spec(Subset::Hard, cache.path());
    let err = spec.load().unwrap_err().to_string();
    assert!(err.contains("HTTP 502"), "{err}");
    assert!(err.contains("after 3 attempts"), "{err}");
    assert_eq!(hub.seen().len(), 3);
    assert!(!spec.cache_path().exists());
}

#[test]
fn missing_file_is_a_clear_404_naming_the_url() {
    let _env = env_lock();
    let hub = Hub::start();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = hub.spec(Subset::Full, cache.path());
    spec.version = "v0.1.5".into();
    let err = spec.load().unwrap_err().to_string();
    let url = parquet_url(&hub.endpoint, Subset::Full, "v0.1.5");
    assert!(err.contains(&url), "{err}");
    assert!(err.contains("404"), "{err}");
    assert!(err.contains("Entry not found"), "{err}");
    assert!(
        err.contains("--dataset FILE") && err.contains("BCB_DATASET_DIR"),
        "{err}"
    );
    assert_eq!(hub.seen().len(), 1, "a 404 is not retried");
    assert!(!spec.cache_path().exists());
}

#[test]
fn offline_with_empty_cache_is_a_clear_error_without_requests() {
    let _env = env_lock();
    let hub = Hub::start();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = hub.spec(Subset::Hard, cache.path());
    spec.offline = true;
    let err = spec.load().unwrap_err().to_string();
    assert!(err.contains("offline"), "{err}");
    assert!(err.contains("bigcodebench-hard-v0.1.4"), "{err}");
    assert!(err.contains("--dataset FILE"), "{err}");
    assert!(hub.seen().is_empty());
}

#[test]
fn unreachable_endpoint_is_retried_then_reported() {
    let _env = env_lock();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let mut spec = Hub::start().spec(Subset::Hard, cache.path());
    spec.hub_endpoint = format!("http://127.0.0.1:{port}");
    let err = spec.load().unwrap_err().to_string();
    assert!(
        err.contains(&format!("127.0.0.1:{port}/datasets/")),
        "{err}"
    );
    assert!(err.contains("after 3 attempts"), "{err}");
    assert!(
        err.to_lowercase().contains("connect") || err.contains("refused"),
        "{err}"
    );
}

#[test]
fn body_that_is_not_parquet_is_rejected_and_not_cached() {
    let _env = env_lock();
    let hub = Hub::start();
    hub.serve_raw(Subset::Hard, "v0.1.4", b"<html>rate limited</html>");
    let cache = tempfile::tempdir().unwrap();
    let spec = hub.spec(Subset::Hard, cache.path());
    let err = spec.load().unwrap_err().to_string();
    assert!(err.contains("not a readable dataset parquet"), "{err}");
    assert!(!spec.cache_path().exists());
    assert!(stray_files(cache.path(), &spec.cache_path()).is_empty());
}

#[test]
fn hf_token_is_sent_as_bearer_not_to_the_cdn_and_never_printed() {
    let _env = env_lock();
    let Some(dir) = data_dir() else { return };
    let token = "hf_bcbTestToken0123456789";
    let file_token = "hf_bcbFromTokenFile42";
    let token_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token_file.path(), format!("{file_token}\n")).unwrap();
    let saved: Vec<_> = ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH"]
        .iter()
        .map(|k| (*k, std::env::var_os(k)))
        .collect();
    std::env::remove_var("HUGGING_FACE_HUB_TOKEN");
    std::env::set_var("HF_TOKEN", token);

    let fx = fixture(&dir, "bigcodebench-hard-v0.1.4");
    let hub = Hub::start();
    let cdn = Hub::start();
    hub.serve(Subset::Hard, "v0.1.4", fx.clone());
    cdn.serve(Subset::Hard, "v0.1.4", fx);
    hub.redirect_to(&cdn);
    let cache = tempfile::tempdir().unwrap();
    let ok = hub.spec(Subset::Hard, cache.path()).load();
    // A refused request: its message must not carry the token.
    hub.fail_first(Subset::Full, "v0.1.4", &[401]);
    let err = hub.spec(Subset::Full, cache.path()).load().unwrap_err();
    // Without the variables, the token file `huggingface-cli login` writes is used.
    std::env::remove_var("HF_TOKEN");
    std::env::set_var("HF_TOKEN_PATH", token_file.path());
    hub.fail_first(Subset::Full, "v0.1.4", &[403]);
    let from_file = hub.spec(Subset::Full, cache.path()).load().unwrap_err();

    for (k, v) in saved {
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
    assert_eq!(ok.unwrap().sha256, HARD_V014_SHA256);
    let seen = hub.seen();
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(&*format!("Bearer {token}"))
    );
    let cdn_seen = cdn.seen();
    assert_eq!(cdn_seen.len(), 1, "{cdn_seen:?}");
    assert!(cdn_seen[0].path.starts_with("/cdn/"));
    assert_eq!(
        cdn_seen[0].authorization, None,
        "token must not follow a redirect to another host"
    );
    let text = format!("{err} {err:?} {from_file} {from_file:?}");
    assert!(text.contains("401") && text.contains("HF_TOKEN"), "{text}");
    assert!(
        !text.contains(token) && !text.contains(file_token),
        "token leaked into the error: {text}"
    );
    assert_eq!(
        seen.last().unwrap().authorization.as_deref(),
        Some(&*format!("Bearer {file_token}"))
    );
}

#[test]
fn default_version_comes_from_the_embedded_copy_offline_when_nothing_else_has_it() {
    if !bcb_dataset::has_embedded(Subset::Hard) {
        assert!(
            std::env::var("CI").is_err(),
            "CI builds must embed the default dataset (set BCB_DATASET_DIR at build time)"
        );
        eprintln!("SKIPPED: this build has no embedded dataset");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let mut spec = DatasetSpec::new(Subset::Hard, None);
    spec.path = None;
    spec.dataset_dir = None;
    spec.cache_dir = cache.path().to_path_buf();
    spec.offline = true;
    spec.embedded = true;
    assert!(matches!(spec.resolve().unwrap(), Source::Embedded(_)));
    let ds = spec.load().unwrap();
    assert_eq!(ds.len(), 148);
    assert_eq!(
        ds.sha256,
        "af4fed119f71fca6dda51251c294bf566f6ba6c394ee14525152a1a319eab432"
    );
    // Written to the cache once; later runs read it from there.
    assert!(matches!(spec.resolve().unwrap(), Source::Cache(_)));
    // Other versions never come from it.
    let mut other = spec.clone();
    other.version = "v0.1.5".into();
    assert!(other.load().is_err());
}
