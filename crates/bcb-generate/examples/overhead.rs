//! Client overhead of `bcb generate`: drives a loopback stub at high concurrency through the
//! whole pipeline (prompt, request, retry wrapper, parse, sanitize, journal append).
//!
//!   overhead serve            prints the stub's URL, serves until stdin closes
//!   overhead client URL [N] [--fsync]
//!
//! bench/generate-overhead.sh pins the two to different cores.
#![allow(clippy::print_stdout, clippy::print_stderr)] // examples and tests report to the person running them

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use bcb_dataset::{DatasetSpec, Split, Subset};
use bcb_generate::testing::TestServer;
use bcb_generate::{Backend, GenerateOptions, Temperature};
use serde_json::json;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => {
            let stub = TestServer::stub(Arc::new(|_: &str, _: &serde_json::Value| {
                let body = json!({
                    "content": [{"type": "text", "text": "```python\ndef task_func():\n    return 1\n```"}],
                    "usage": {"input_tokens": 120, "output_tokens": 12}
                });
                (200, "application/json", body.to_string())
            }));
            println!("{}", stub.url());
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
            Ok(())
        }
        Some("client") => {
            let url = args.get(1).expect("URL").clone();
            let n: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
            let fsync = args.iter().any(|a| a == "--fsync");
            let mut spec = DatasetSpec::new(Subset::Full, None);
            spec.offline = true;
            let ds = spec.load()?;
            let dir = tempfile::tempdir()?;
            // Anthropic takes one sample per request: 1,140 × n requests.
            let mut o =
                GenerateOptions::new("stub", Backend::Anthropic, Split::Instruct, Subset::Full);
            o.base_url = Some(url);
            o.root = dir.path().to_path_buf();
            o.n_samples = n;
            o.temperature = Temperature::parse("0.8").map_err(anyhow::Error::msg)?;
            o.concurrency = Some(256);
            o.durable = fsync;
            let t0 = Instant::now();
            let out = bcb_generate::run_codegen(&o, &ds)?;
            let secs = t0.elapsed().as_secs_f64();
            assert!(out.is_complete(), "{}", out.summary());
            println!(
                "requests={} samples={} seconds={secs:.2} requests_per_second={:.0} fsync={fsync}",
                out.requests,
                out.written,
                out.requests as f64 / secs
            );
            Ok(())
        }
        _ => anyhow::bail!("usage: overhead serve | overhead client URL [N] [--fsync]"),
    }
}
