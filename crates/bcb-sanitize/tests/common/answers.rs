//! Generated model answers for the differential test and the benchmark: the dataset's
//! canonical solutions, mutated and wrapped the way chat models wrap code.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

pub struct Task {
    pub task_id: String,
    pub code: String,
    pub entry_point: String,
}

pub struct Answer {
    pub task_id: String,
    pub entry_point: String,
    pub text: String,
    pub recipe: String,
}

/// The real dataset from `$BCB_DATASET_DIR` (or `../shared` beside the repository).
pub fn dataset_file() -> Option<PathBuf> {
    let dir = std::env::var_os("BCB_DATASET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bigcodebench")
        });
    let f = dir.join("bigcodebench-v0.1.4.jsonl.gz");
    f.exists().then_some(f)
}

/// The text of a gzipped file (here, not in `real.rs`: `examples/sanitize_bench.rs` includes
/// this file alone).
pub fn read_gz(path: &std::path::Path) -> String {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text
}

pub fn load_tasks(path: &std::path::Path) -> Vec<Task> {
    read_gz(path)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("dataset row is JSON");
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            Task {
                task_id: s("task_id"),
                code: format!("{}{}", s("complete_prompt"), s("canonical_solution")),
                entry_point: s("entry_point"),
            }
        })
        .collect()
}

/// xorshift64*: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const PROSE_BEFORE: &[&str] = &[
    "Here's the solution:",
    "Sure! Below is a self-contained implementation of the function.",
    "To solve this, we’ll iterate over the input — carefully.",
    "# Solution",
    "## Approach\n\n1. Parse the input\n2. Compute the result\n3. Return it",
    "Certainly. The function `task_func` does the following:\n- validates input\n- computes the value",
    "Explanation: we use the standard library.",
    "Note: this handles edge cases.",
    "I think the answer is:",
    "下面是代码：",
    "Voilà la solution complète 🚀",
    "",
];

const PROSE_AFTER: &[&str] = &[
    "This code defines `task_func` as required.",
    "### Explanation\n- The function returns the result.\n- It raises ValueError on bad input.",
    "Let me know if you'd like any changes!",
    "Example usage:\n```python\nresult = task_func()\nprint(result)\n```",
    "Output: 42",
    "The time complexity is O(n).",
    "That’s it — hope it helps ✅",
    "",
];

const FENCES: &[&str] = &["```python", "```py", "```", "```Python"];

fn mutate_code(rng: &mut Rng, code: &str, entry: &str, recipe: &mut Vec<String>) -> String {
    let mut code = code.to_string();
    if rng.chance(15) {
        // Model printed only from the signature on (no imports) or dropped the docstring.
        if let Some(p) = code.find("def ") {
            code = code[p..].to_string();
            recipe.push("no-imports".into());
        }
    }
    // Lines a model adds after the code: (chance in percent, the lines, the recipe's name).
    let tails = [
        (
            12,
            format!("\n\nif __name__ == \"__main__\":\n    print({entry}())\n"),
            "main-block",
        ),
        (
            12,
            format!("\n\nresult = {entry}()\nprint(result)\n"),
            "trailing-print",
        ),
        (
            10,
            format!("\n\ndef {entry}(*args, **kwargs):\n    raise NotImplementedError\n"),
            "duplicate-def",
        ),
    ];
    for (percent, tail, name) in tails {
        if rng.chance(percent) {
            code.push_str(&tail);
            recipe.push(name.into());
        }
    }
    if rng.chance(10) {
        code = format!(
            "CONSTANT = 42\n\nclass Helper:\n    def run(self):\n        return CONSTANT\n\n{code}"
        );
        recipe.push("helper-class".into());
    }
    if rng.chance(8) {
        code.push_str("\n\nimport unittest\n\nclass TestCases(unittest.TestCase):\n    def test_1(self):\n        self.assertTrue(True)\n\nunittest.main()\n");
        recipe.push("tests".into());
    }
    if rng.chance(8) {
        // A syntax error somewhere: drop a colon or a closing bracket on one line.
        let lines: Vec<&str> = code.split('\n').collect();
        let k = rng.below(lines.len());
        let mut l = lines[k].to_string();
        if let Some(p) = l.rfind([':', ')', ']']) {
            l.remove(p);
        }
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        v[k] = l;
        code = v.join("\n");
        recipe.push(format!("broken-line-{k}"));
    }
    if rng.chance(6) {
        // Truncated output (length limit).
        let lines: Vec<&str> = code.split('\n').collect();
        let keep = 1 + rng.below(lines.len());
        code = lines[..keep].join("\n");
        recipe.push(format!("truncated-{keep}"));
    }
    if rng.chance(5) {
        code = code.replace("    ", "\t");
        recipe.push("tabs".into());
    }
    if rng.chance(4) {
        code = code.replace("\"\"\"", "'''");
        recipe.push("single-quote-docstrings".into());
    }
    if rng.chance(4) {
        // Calibration style: only the indented body.
        if let Some(p) = code.find("\"\"\"\n") {
            if let Some(q) = code[p + 4..].find("\"\"\"\n") {
                code = code[p + 4 + q + 4..].to_string();
                recipe.push("body-only".into());
            }
        }
    }
    code
}

pub fn make_answer(task: &Task, seed: u64) -> Answer {
    let mut rng = Rng::new(seed);
    let mut recipe = Vec::new();
    let code = mutate_code(&mut rng, &task.code, &task.entry_point, &mut recipe);
    let mut parts: Vec<String> = Vec::new();
    if rng.chance(10) {
        parts.push(format!(
            "<think>\nThe user wants {}. Let me write:\n```python\ndef {}():\n    pass\n```\nOkay that’s wrong, let’s redo it.\n</think>",
            task.task_id, task.entry_point
        ));
        recipe.push("think".into());
    }
    let style = rng.below(10);
    recipe.push(format!("style-{style}"));
    match style {
        0 => parts.push(code.clone()), // bare code
        1..=5 => {
            if rng.chance(60) {
                parts.push(rng.pick(PROSE_BEFORE).to_string());
            }
            if rng.chance(20) {
                // A smaller snippet first (several fences).
                parts.push(format!(
                    "{}\nimport os\nprint(os.getcwd())\n```",
                    rng.pick(FENCES)
                ));
            }
            let fence = rng.pick(FENCES);
            let close = if rng.chance(93) { "```" } else { "" };
            parts.push(format!("{fence}\n{code}\n{close}"));
            if rng.chance(60) {
                parts.push(rng.pick(PROSE_AFTER).to_string());
            }
        }
        6 => {
            // Prose interleaved with pieces of the code.
            let lines: Vec<&str> = code.split('\n').collect();
            let cut = rng.below(lines.len());
            parts.push(format!(
                "```python\n{}\n```\nThen the rest:\n```python\n{}\n```",
                lines[..cut].join("\n"),
                lines[cut..].join("\n")
            ));
        }
        7 => {
            parts.push(rng.pick(PROSE_BEFORE).to_string());
            parts.push(code.clone());
            parts.push(rng.pick(PROSE_AFTER).to_string());
        }
        8 => {
            parts.push("```python\n```".into()); // empty fence
            parts.push(format!("```python\n{code}\n```"));
            parts.push("```python\nprint('done')\n```".into());
        }
        _ => {
            // Unusual answers: empty, prose only, a single line.
            match rng.below(4) {
                0 => parts.push(String::new()),
                1 => parts.push("I cannot help with that.".into()),
                2 => parts.push(format!("def {}(): return 1", task.entry_point)),
                _ => parts.push(format!(
                    "{}\n{}",
                    rng.pick(PROSE_BEFORE),
                    rng.pick(PROSE_AFTER)
                )),
            }
        }
    }
    let sep = if rng.chance(50) { "\n\n" } else { "\n" };
    let mut text = parts.join(sep);
    if rng.chance(8) {
        text = text.replace('\n', "\r\n");
        recipe.push("crlf".into());
    }
    if rng.chance(10) {
        text = format!("  {text}  \n");
        recipe.push("padded".into());
    }
    Answer {
        task_id: task.task_id.clone(),
        entry_point: task.entry_point.clone(),
        text,
        recipe: recipe.join(","),
    }
}

/// `count` answers cycling over the tasks, deterministic for a given seed.
pub fn answers(tasks: &[Task], count: usize, seed: u64) -> Vec<Answer> {
    (0..count)
        .map(|k| make_answer(&tasks[k % tasks.len()], seed ^ (k as u64 * 7919)))
        .collect()
}
