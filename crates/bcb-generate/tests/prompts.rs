//! The request bodies sent for 20 tasks of each split equal what the original harness
//! (bigcodebench 0.2.5) sends. Expected bodies are written here from its rules, independently
//! of the crate's prompt code; the stub server records what actually went over the wire.

mod common;

use bcb_dataset::{Split, Subset, Task};
use bcb_generate::testing::TestServer;
use bcb_generate::Backend;
use serde_json::{json, Value};

const INSTRUCTION: &str = "Please provide a self-contained Python script that solves the following problem in a markdown code block:";
const EOS: [&str; 6] = [
    "<|endoftext|>",
    "<|endofmask|>",
    "</s>",
    "\nif __name__",
    "\ndef main(",
    "\nprint(",
];

/// Python's `str.strip()` for the whitespace that occurs in prompts.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| " \t\n\r\x0b\x0c".contains(c))
}

/// `make_raw_chat_prompt(..., tokenizer=None)`.
fn expected_user(task: &Task, split: Split) -> String {
    match split {
        Split::Complete => format!(
            "{INSTRUCTION}\n```\n{}\n```\n",
            py_strip(&task.complete_prompt)
        ),
        Split::Instruct => format!("{INSTRUCTION}\n{}\n", py_strip(&task.instruct_prompt)),
    }
}

/// Runs 20 tasks through `backend` against a recording stub; returns task → body.
fn capture(
    backend: Backend,
    model: &str,
    split: Split,
    tweak: impl FnOnce(&mut bcb_generate::GenerateOptions),
) -> (Vec<Task>, Vec<(String, Value)>) {
    let ds = common::dataset(Subset::Full);
    let stub = TestServer::stub(common::canned());
    let dir = tempfile::tempdir().unwrap();
    let base = match backend {
        Backend::OpenAi | Backend::Mistral | Backend::Vllm => stub.v1_url(),
        _ => stub.url(),
    };
    let mut o = common::quick_opts(backend, model, split, Subset::Full, base, dir.path());
    o.id_range = Some((0, 20));
    o.concurrency = Some(1); // bodies arrive in task order
    tweak(&mut o);
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    let tasks = ds.tasks()[..20].to_vec();
    (tasks, stub.bodies())
}

#[test]
fn openai_chat_bodies_match_the_original_greedy_and_sampling() {
    for split in [Split::Complete, Split::Instruct] {
        let (tasks, bodies) = capture(Backend::OpenAi, "gpt-4o", split, |_| {});
        assert_eq!(bodies.len(), 20);
        for (task, (path, body)) in tasks.iter().zip(&bodies) {
            assert_eq!(path, "/v1/chat/completions");
            // make_request: n, top_p=0.95, max_completion_tokens, temperature (int 0 when greedy).
            let want = json!({
                "model": "gpt-4o",
                "messages": [{"role": "user", "content": expected_user(task, split)}],
                "n": 1, "top_p": 0.95, "max_completion_tokens": 1280, "temperature": 0
            });
            assert_eq!(body, &want, "{} {split}", task.task_id);
        }
    }
    // Sampling: all n samples in one request.
    let (tasks, bodies) = capture(Backend::OpenAi, "gpt-4o", Split::Instruct, |o| {
        o.n_samples = 5;
        o.temperature = bcb_generate::Temperature::parse("0.8").unwrap();
        o.max_tokens = 512;
    });
    assert_eq!(bodies.len(), 20);
    for (task, (_, body)) in tasks.iter().zip(&bodies) {
        let want = json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": expected_user(task, Split::Instruct)}],
            "n": 5, "top_p": 0.95, "max_completion_tokens": 512, "temperature": 0.8
        });
        assert_eq!(body, &want);
    }
}

#[test]
fn openai_reasoning_model_bodies_carry_effort_only() {
    let (tasks, bodies) = capture(Backend::OpenAi, "o3-mini", Split::Complete, |o| {
        o.n_samples = 2;
        o.temperature = bcb_generate::Temperature::parse("1").unwrap();
    });
    // o1-/o3-/deepseek: one sample per request, n=1, no sampling fields.
    assert_eq!(bodies.len(), 40);
    for (i, (_, body)) in bodies.iter().enumerate() {
        let task = &tasks[i / 2];
        let want = json!({
            "model": "o3-mini",
            "messages": [{"role": "user", "content": expected_user(task, Split::Complete)}],
            "n": 1, "reasoning_effort": "medium"
        });
        assert_eq!(body, &want);
    }
}

#[test]
fn anthropic_bodies_match_the_original_without_a_thinking_budget() {
    for split in [Split::Complete, Split::Instruct] {
        let (tasks, bodies) = capture(Backend::Anthropic, "claude-3-5-sonnet", split, |_| {});
        assert_eq!(bodies.len(), 20);
        for (task, (path, body)) in tasks.iter().zip(&bodies) {
            assert_eq!(path, "/v1/messages");
            // messages.create(max_tokens, temperature, stop_sequences=EOS); no thinking (the
            // original always sent budget 0, a bug this crate does not copy).
            let want = json!({
                "model": "claude-3-5-sonnet",
                "messages": [{"role": "user", "content": expected_user(task, split)}],
                "max_tokens": 1280, "temperature": 0, "stop_sequences": EOS
            });
            assert_eq!(body, &want, "{} {split}", task.task_id);
        }
    }
    // With a budget: thinking block, no temperature.
    let (_, bodies) = capture(
        Backend::Anthropic,
        "claude-3-7-sonnet",
        Split::Instruct,
        |o| {
            o.reasoning_budget = 2048;
            o.id_range = Some((0, 1));
        },
    );
    assert_eq!(
        bodies[0].1["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert!(bodies[0].1.get("temperature").is_none());
}

#[test]
fn google_bodies_match_the_original() {
    let (tasks, bodies) = capture(Backend::Google, "gemini-1.5-pro", Split::Instruct, |_| {});
    assert_eq!(bodies.len(), 20);
    let safety: Vec<Value> = [
        "HARM_CATEGORY_DANGEROUS_CONTENT",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_HARASSMENT",
    ]
    .iter()
    .map(|c| json!({"category": c, "threshold": "BLOCK_NONE"}))
    .collect();
    for (task, (path, body)) in tasks.iter().zip(&bodies) {
        assert_eq!(path, "/v1beta/models/gemini-1.5-pro:generateContent");
        let want = json!({
            "contents": [{"role": "user", "parts": [{"text": expected_user(task, Split::Instruct)}]}],
            "generationConfig": {"candidateCount": 1, "temperature": 0, "maxOutputTokens": 1280},
            "safetySettings": safety,
        });
        assert_eq!(body, &want);
    }
}

#[test]
fn mistral_bodies_match_the_original_plus_temperature() {
    let (tasks, bodies) = capture(
        Backend::Mistral,
        "mistral-large-latest",
        Split::Complete,
        |_| {},
    );
    assert_eq!(bodies.len(), 20);
    for (task, (_, body)) in tasks.iter().zip(&bodies) {
        // The original sends (model, messages, max_tokens) and forgets temperature.
        let want = json!({
            "model": "mistral-large-latest",
            "messages": [{"role": "user", "content": expected_user(task, Split::Complete)}],
            "max_tokens": 1280, "temperature": 0
        });
        assert_eq!(body, &want);
    }
}

#[test]
fn direct_completion_sends_the_raw_prompt_with_eos_and_extra_stops() {
    let (tasks, bodies) = capture(
        Backend::OpenAi,
        "bigcode/starcoder2-15b",
        Split::Complete,
        |o| {
            o.direct_completion = true;
            o.n_samples = 3;
            o.temperature = bcb_generate::Temperature::parse("0.8").unwrap();
        },
    );
    assert_eq!(bodies.len(), 20);
    let mut stops: Vec<&str> = EOS.to_vec();
    stops.extend(["\ndef ", "\nclass ", "\nimport ", "\nfrom ", "\nassert "]);
    for (task, (path, body)) in tasks.iter().zip(&bodies) {
        assert_eq!(path, "/v1/completions");
        // The original's vLLM path: raw prompt, top_p 0.95 when sampling, stop = EOS + extra.
        let want = json!({
            "model": "bigcode/starcoder2-15b", "prompt": task.complete_prompt,
            "n": 3, "max_tokens": 1280, "temperature": 0.8, "top_p": 0.95, "stop": stops
        });
        assert_eq!(body, &want);
    }
}

#[test]
fn overridden_prefixes_and_prefill_are_sent() {
    let (tasks, bodies) = capture(Backend::Anthropic, "claude", Split::Instruct, |o| {
        o.instruction_prefix = "Solve:".into();
        o.response_prefix = "Answer:".into();
        o.prefill = true;
        o.id_range = Some((0, 2));
    });
    let want_user = format!("Solve:\n{}\n", py_strip(&tasks[0].instruct_prompt));
    assert_eq!(
        bodies[0].1["messages"],
        json!([{"role": "user", "content": want_user}, {"role": "assistant", "content": "Answer:\n```python\n"}])
    );
    assert_eq!(
        bodies[0].1["stop_sequences"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "\n```\n"
    );
}

#[test]
fn prefill_on_an_openai_compatible_server_asks_it_to_continue_the_answer() {
    let (tasks, bodies) = capture(Backend::OpenAi, "local-model", Split::Complete, |o| {
        o.prefill = true;
        o.id_range = Some((0, 2));
    });
    let b = &bodies[0].1;
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": expected_user(&tasks[0], Split::Complete)},
               {"role": "assistant", "content": format!("{}\n```python\n", "Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:")}])
    );
    // What vLLM and SGLang need to continue a trailing assistant message.
    assert_eq!(b["continue_final_message"], json!(true));
    assert_eq!(b["add_generation_prompt"], json!(false));
    assert_eq!(b["stop"].as_array().unwrap().last().unwrap(), "\n```\n");
}

#[test]
fn vllm_bodies_follow_the_original_vllm_decoder() {
    // The original's vLLM path: chat template + prefilled response prefix unless
    // --skip_prefill, EOS stops, top_p 1.0 when greedy, special tokens kept.
    let (tasks, bodies) = capture(Backend::Vllm, "org/model", Split::Instruct, |o| {
        o.id_range = Some((0, 2));
    });
    let b = &bodies[0].1;
    assert_eq!(
        b["messages"][0]["content"],
        json!(expected_user(&tasks[0], Split::Instruct))
    );
    assert_eq!(b["messages"][1]["role"], "assistant");
    assert_eq!(b["continue_final_message"], json!(true));
    assert_eq!(b["add_generation_prompt"], json!(false));
    assert_eq!(
        (b["top_p"].clone(), b["temperature"].clone()),
        (json!(1.0), json!(0))
    );
    assert_eq!(b["max_tokens"], json!(1280));
    assert_eq!(b["skip_special_tokens"], json!(false));
    let stops: Vec<&str> = EOS.iter().copied().chain(["\n```\n"]).collect();
    assert_eq!(b["stop"], json!(stops));

    let (_, bodies) = capture(Backend::Vllm, "org/model", Split::Instruct, |o| {
        o.skip_prefill = true;
        o.id_range = Some((0, 1));
    });
    let b = &bodies[0].1;
    assert_eq!(b["messages"].as_array().unwrap().len(), 1);
    assert!(b.get("continue_final_message").is_none());
    assert_eq!(b["stop"], json!(EOS));
}

#[test]
fn hf_inference_bodies_are_the_original_text_generation_call() {
    std::env::set_var("HF_INFERENCE_API_KEY", "hf_test_key");
    let ds = common::dataset(Subset::Full);
    let stub = TestServer::stub(std::sync::Arc::new(|path: &str, _: &Value| {
        assert_eq!(path, "/models/bigcode/starcoder2-15b");
        (
            200,
            "application/json",
            json!([{"generated_text": common::ANSWER}]).to_string(),
        )
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::quick_opts(
        Backend::HfInference,
        "bigcode/starcoder2-15b",
        Split::Complete,
        Subset::Full,
        stub.url(),
        dir.path(),
    );
    o.id_range = Some((0, 3));
    let out = bcb_generate::run_codegen(&o, &ds).unwrap();
    assert!(out.is_complete(), "{}", out.summary());
    let bodies = stub.bodies();
    assert_eq!(bodies.len(), 3);
    let first = bodies
        .iter()
        .find(|(_, b)| b["inputs"] == json!(expected_user(&ds.tasks()[0], Split::Complete)))
        .expect("task 0 sent");
    // make_raw_chat_prompt(tokenizer=None): the user text, no chat template; greedy.
    assert_eq!(
        first.1["parameters"],
        json!({"max_new_tokens": 1280, "return_full_text": false, "do_sample": false})
    );
    let headers = stub.state.headers.lock().unwrap().clone();
    assert!(headers[0]
        .1
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer hf_test_key"));
}
