//! End to end against a real llama.cpp server (xllamacpp + a 270M Gemma GGUF from PyPI,
//! installed by .ci/setup-llm.sh) on loopback: OpenAI chat, OpenAI completions (direct
//! completion) and Anthropic messages each generate 3 hard tasks × 2 samples. The model is
//! tiny, so only the protocol and the files are checked, not the code quality.
//! Skipped (with a message) when the server is not installed, unless BCB_REQUIRE_LLM=1.

mod common;

use bcb_dataset::{Split, Subset};
use bcb_generate::testing::{llm_server, Fault, TestServer};
use bcb_generate::{Backend, Temperature};

fn check_samples(path: &std::path::Path, ds: &bcb_dataset::Dataset, per_task: usize) {
    let samples = bcb_samples::read_samples(path).expect("valid samples file");
    assert_eq!(samples.len(), 3 * per_task);
    for t in &ds.tasks()[..3] {
        let mine: Vec<_> = samples.iter().filter(|s| s.task_id == t.task_id).collect();
        assert_eq!(mine.len(), per_task, "{}", t.task_id);
        for s in mine {
            assert!(matches!(s.body, bcb_samples::SampleBody::Solution(_)));
            assert!(s.raw_solution.as_deref().is_some_and(|r| !r.is_empty()));
        }
    }
}

/// Runs `o`, checks that the run completed and wrote `file`, and returns its outcome.
fn run_to(
    o: &bcb_generate::GenerateOptions,
    ds: &bcb_dataset::Dataset,
    file: &str,
) -> bcb_generate::Outcome {
    let out = bcb_generate::run_codegen(o, ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    assert_eq!(out.path.file_name().unwrap().to_str().unwrap(), file);
    out
}

/// The hard subset, a fresh output dir, and a run of `gemma-test` at `base` over its first
/// three tasks, two samples each.
fn opts(
    backend: Backend,
    split: Split,
    base: String,
) -> (
    bcb_dataset::Dataset,
    tempfile::TempDir,
    bcb_generate::GenerateOptions,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::quick_opts(backend, "gemma-test", split, Subset::Hard, base, dir.path());
    o.id_range = Some((0, 3));
    o.n_samples = 2;
    o.temperature = Temperature::parse("0.8").unwrap();
    o.max_tokens = 32;
    o.seed = Some(1);
    o.concurrency = Some(2);
    (common::dataset(Subset::Hard), dir, o)
}

#[test]
fn llama_server_openai_chat_three_hard_tasks_two_samples() {
    let Some(server) = llm_server(2) else { return };
    let v1 = format!("{}/v1", server.base_url());
    let (ds, _dir, o) = opts(Backend::OpenAi, Split::Instruct, v1);
    let out = run_to(
        &o,
        &ds,
        "gemma-test--main--bigcodebench-hard-instruct--openai-0.8-2-sanitized_calibrated.jsonl",
    );
    assert_eq!(out.requests, 3, "n=2 in one request per task");
    assert!(out.usage.output_tokens > 0);
    check_samples(&out.path, &ds, 2);
}

#[test]
fn llama_server_openai_completions_direct_three_hard_tasks_two_samples() {
    let Some(server) = llm_server(2) else { return };
    let v1 = format!("{}/v1", server.base_url());
    let (ds, _dir, mut o) = opts(Backend::OpenAi, Split::Complete, v1);
    o.direct_completion = true;
    let out = run_to(
        &o,
        &ds,
        "gemma-test--main--bigcodebench-hard-complete--openai-0.8-2-sanitized_calibrated.jsonl",
    );
    check_samples(&out.path, &ds, 2);
    // Direct completion keeps prompt + continuation.
    for s in bcb_samples::read_samples(&out.path).unwrap() {
        let t = ds.get(&s.task_id).unwrap();
        assert!(s.raw_solution.unwrap().starts_with(&t.complete_prompt));
    }
}

#[test]
fn llama_server_anthropic_messages_three_hard_tasks_two_samples() {
    let Some(server) = llm_server(2) else { return };
    let (ds, _dir, o) = opts(Backend::Anthropic, Split::Instruct, server.base_url());
    let out = run_to(
        &o,
        &ds,
        "gemma-test--main--bigcodebench-hard-instruct--anthropic-0.8-2-sanitized_calibrated.jsonl",
    );
    assert_eq!(out.requests, 6, "Anthropic: one sample per request");
    check_samples(&out.path, &ds, 2);
}

#[test]
fn llama_server_behind_fault_proxy_completes_with_retries() {
    std::env::set_var("BCB_RETRY_MIN_DELAY_MS", "50");
    let Some(server) = llm_server(2) else { return };
    let proxy = TestServer::proxy(&server.base_url());
    proxy.push_faults([
        Fault::Status {
            status: 429,
            retry_after: Some(1),
        },
        Fault::DropConnection,
        Fault::Status {
            status: 502,
            retry_after: None,
        },
    ]);
    let (ds, _dir, mut o) = opts(Backend::OpenAi, Split::Instruct, proxy.v1_url());
    o.concurrency = Some(1);
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    assert_eq!(out.retries, 3);
    assert_eq!(proxy.received(), 6);
    assert_eq!(proxy.served(), 3);
    check_samples(&out.path, &ds, 2);
}
