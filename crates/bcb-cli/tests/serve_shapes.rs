//! Every endpoint of `bcb serve` that takes model text reads every shape of an answer (a
//! program, chat, think, instruct, a continuation of the prompt) as `bcb sanitize` + `bcb
//! evaluate` score it in a samples file: the real binary, eval env and `sandbox-fusion` client.

mod evalkit;
mod servekit;

use std::process::{Command, Stdio};

use serde_json::{json, Value};
use servekit::{canonical_program, evaluate_statuses, statuses, Server, NO_OVERLAP, TASKS};

/// The shapes a client sends one answer in, from its code (`program`, a whole program) and
/// its continuation of the prompt (`continuation`, else the program's text after the prompt's
/// function head when it holds that head verbatim). Each is `(shape, samples-file row field, text)`: what `bcb sanitize` reads it as
/// in a samples file.
fn answer_shapes(
    task: &Value,
    program: &str,
    continuation: Option<&str>,
) -> Vec<(&'static str, &'static str, String)> {
    let fenced = format!("```python\n{program}\n```");
    let chat = format!("Here is the solution:\n{fenced}\nIt defines `task_func`.\n");
    let think = format!(
        "<think>A first try:\n```python\ndef task_func(*args, **kwargs):\n    return None\n```\nNo.</think>\n{chat}"
    );
    // The instruct split's answer: the code block, then usage in another block.
    let instruct = format!("{fenced}\n\nUsage:\n```python\nprint(task_func())\n```\n");
    let mut shapes = vec![
        ("program", "solution", program.to_string()),
        ("chat", "solution", chat),
        ("think", "solution", think),
        ("instruct", "solution", instruct),
    ];
    let prompt = task["complete_prompt"].as_str().unwrap();
    let head = &prompt[prompt.find("def task_func").unwrap()..];
    let continuation = continuation
        .or_else(|| program.find(head).map(|at| &program[at + head.len()..]))
        .map(str::to_string);
    if let Some(continuation) = continuation {
        shapes.push((
            "prompt+continuation",
            "solution",
            format!("{prompt}{continuation}"),
        ));
        shapes.push(("continuation", "completion", continuation));
    }
    shapes
}

/// Every endpoint that takes model text reads every shape of the real answers of two models
/// (and the canonical solutions) as `bcb sanitize` + `bcb evaluate` score them in a samples
/// file: `/v1/evaluate` with `sanitize` (the row as the file holds it, and every shape sent as
/// a `solution`), `/openrlhf` (a continuation after the task's prompt, other shapes after a
/// chat prompt) and the real `sandbox-fusion` client's `/submit`, freeform and not, whose
/// `full_code` is the very program `bcb sanitize` writes.
#[test]
fn every_endpoint_reads_every_answer_shape_as_bcb_sanitize_and_evaluate_score_it() {
    let Some(env) = evalkit::env() else { return };
    let Some(client) = bcb_testkit::serve_client_python() else {
        return;
    };
    let server = Server::start(&env, &NO_OVERLAP);
    // (source, task, shape, field, text)
    let mut cases: Vec<(String, String, &str, &str, String)> = Vec::new();
    let mut add = |source: &str, id: &str, program: &str, continuation: Option<&str>| {
        for (shape, field, text) in answer_shapes(&env.task(id), program, continuation) {
            cases.push((source.into(), id.into(), shape, field, text));
        }
    };
    for id in TASKS {
        let t = env.task(id);
        let body = t["canonical_solution"].as_str().unwrap();
        add("canonical", id, &canonical_program(&t), Some(body));
    }
    for (model, stem) in [("Hermes-2-Theta", evalkit::HERMES), ("Phi-4", evalkit::PHI)] {
        for row in evalkit::real_answers(&env, stem, &TASKS) {
            let id = row["task_id"].as_str().unwrap();
            add(model, id, row["solution"].as_str().unwrap(), None);
        }
    }
    let shapes: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.2).collect();
    assert_eq!(shapes.len(), 6, "every shape built: {shapes:?}");

    // What `bcb sanitize` + `bcb evaluate` make of the rows of a samples file.
    let rows: Vec<Value> = cases
        .iter()
        .map(|(_, id, _, field, text)| json!({"task_id": id, field.to_string(): text}))
        .collect();
    let raw = env.samples("shapes--bigcodebench-hard-complete--raw.jsonl", &rows);
    env.run_ok(&["sanitize", "--samples", raw.to_str().unwrap()]);
    let sanitized: Vec<Value> = std::fs::read_to_string(
        env.path("shapes--bigcodebench-hard-complete--raw-sanitized.jsonl"),
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(sanitized.len(), rows.len());
    let expected = evaluate_statuses(&env, &sanitized);
    let passes = expected.iter().filter(|s| *s == "pass").count();
    assert!(passes > 0 && passes < expected.len(), "{expected:?}");

    let post = |path: &str, body: Value| -> Value {
        let (status, v) = server.post(path, &body);
        assert_eq!(status, 200, "{path}");
        v
    };
    let as_file = post("/v1/evaluate", json!({"samples": rows, "sanitize": true}));
    let as_solutions: Vec<Value> = cases
        .iter()
        .map(|(_, id, _, _, text)| json!({"task_id": id, "solution": text}))
        .collect();
    let all_raw = post(
        "/v1/evaluate",
        json!({"samples": as_solutions, "sanitize": true}),
    );
    const CHAT_PROMPT: &str =
        "<|im_start|>user\nWrite task_func.<|im_end|>\n<|im_start|>assistant\n";
    let (queries, prompts): (Vec<String>, Vec<String>) = cases
        .iter()
        .map(|(_, id, shape, _, text)| {
            let prompt = match *shape {
                "continuation" => env.task(id)["complete_prompt"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                _ => CHAT_PROMPT.to_string(),
            };
            (format!("{prompt}{text}"), prompt)
        })
        .unzip();
    let labels: Vec<&str> = cases.iter().map(|c| c.1.as_str()).collect();
    let rlhf = post(
        "/openrlhf",
        json!({"query": queries, "prompts": prompts, "labels": labels}),
    );

    let script = r#"
import json, sys
from sandbox_fusion import set_endpoint, submit, SubmitRequest, TestConfig, run_concurrent
set_endpoint(sys.argv[1])
cases = json.loads(sys.stdin.read())
def one(task_id, text, freeform):
    r = submit(SubmitRequest(dataset="bigcodebench", id=task_id, completion=text,
                             config=TestConfig(extra={"is_freeform": freeform})))
    return [r.accepted, r.full_code]
args = [[c[0], c[1], ff] for c in cases for ff in (True, False)]
print(json.dumps(run_concurrent(one, args=args, concurrency=8)))
"#;
    let mut child = Command::new(client)
        .args(["-c", script, &server.url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pairs: Vec<(&str, &str)> = cases.iter().map(|c| (c.1.as_str(), c.4.as_str())).collect();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        serde_json::to_string(&pairs).unwrap().as_bytes(),
    )
    .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    evalkit::ok(&out);
    let fusion: Vec<(bool, String)> = serde_json::from_slice(&out.stdout).unwrap();

    let (as_file, all_raw) = (statuses(&as_file), statuses(&all_raw));
    let mut table: std::collections::BTreeMap<&str, [usize; 2]> = Default::default();
    for (i, (source, id, shape, _, _)) in cases.iter().enumerate() {
        let want = &expected[i];
        let pass = want == "pass";
        let at = format!("{source} {id} {shape}: bcb evaluate says {want}");
        assert_eq!(&as_file[i], want, "/v1/evaluate sanitize (file row) {at}");
        assert_eq!(
            &all_raw[i], want,
            "/v1/evaluate sanitize (as solution) {at}"
        );
        assert_eq!(
            rlhf["rewards"][i],
            f64::from(u8::from(pass)),
            "/openrlhf {at}"
        );
        let program = sanitized[i]["solution"].as_str().unwrap();
        for (k, name) in [(0, "freeform"), (1, "not freeform")] {
            let (accepted, full_code) = &fusion[2 * i + k];
            assert_eq!(*accepted, pass, "/submit {name} {at}");
            assert_eq!(full_code, program, "/submit {name} {at}: the program");
        }
        let e = table.entry(shape).or_default();
        e[0] += 1;
        e[1] += usize::from(pass);
    }
    // The table of shapes (answers, passes) in the test's log.
    eprintln!("shape: answers, pass (every endpoint agreeing with bcb evaluate)\n{table:#?}");
    // Partial credit in extra_logs: the native result's fraction.
    let v: Value = post("/v1/evaluate", json!({"samples": rows, "sanitize": true}));
    for (i, r) in v["results"].as_array().unwrap().iter().enumerate() {
        let total = r["tests_total"].as_f64().unwrap();
        let frac = r["tests_passed"].as_f64().unwrap() / total;
        assert_eq!(rlhf["extra_logs"]["tests_passed_frac"][i], frac, "{i}");
        assert_eq!(rlhf["extra_logs"]["tests_total"][i], total, "{i}");
    }
    assert!(rlhf["extra_logs"]["hack"].is_array());
}
