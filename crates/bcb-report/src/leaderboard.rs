//! `leaderboard DIR`: every result file under a folder -> one row per model with pass@1 per
//! split, as a table and as the official leaderboard's `results.json` shape:
//! `{model: {link, open-data, pass@1: {instruct, complete}, prompted, moe, size, act_param,
//! date, prefill}}` (pass@1 in percent with one decimal, `null` when that split was not run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::results::{model_from_file_name, pass_at_k_path, read_json, RunResults};

/// One result file's headline numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Upstream's model name (`org--name--revision`).
    pub model: String,
    pub split: String,
    pub subset: String,
    pub pass_at_1: f64,
    pub tasks: usize,
    /// `YYYY-MM-DD` of the evaluation.
    pub date: String,
    /// The generation ran without assistant prefill (`--skip_prefill` in the file name).
    pub skip_prefill: bool,
    pub path: PathBuf,
}

/// Finds `*_eval_results.json[.gz]` under `dir` (recursively) and reads each one's pass@1:
/// from its pass@k file when present, else computed from the samples. Split and subset come
/// from the pass@k file, else from the file name (`--bigcodebench[-hard]-{split}--`).
pub fn scan(dir: &Path) -> anyhow::Result<Vec<Entry>> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut entries = Vec::new();
    for path in files {
        entries.push(entry(&path)?);
    }
    Ok(entries)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let read = std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for item in read {
        let path = item?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.ends_with("eval_results.json") || n.ends_with("eval_results.json.gz")
        }) {
            out.push(path);
        }
    }
    Ok(())
}

fn entry(path: &Path) -> anyhow::Result<Entry> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let (name_subset, name_split) = split_subset_from_name(name);
    let pk = pass_at_k_path(path)
        .filter(|p| p.exists())
        .map(|p| read_json(&p))
        .transpose()?;
    let field = |k: &str| {
        pk.as_ref()
            .and_then(|v| v.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let run = RunResults::load(path)?;
    let counts = run.counts();
    let pass_at_1 = match pk
        .as_ref()
        .and_then(|v| v.get("pass@1"))
        .and_then(Value::as_f64)
    {
        Some(p) => p,
        None => bcb_eval::passk::mean_pass_at_k(&counts, 1).unwrap_or(0.0),
    };
    Ok(Entry {
        model: field("model").unwrap_or_else(|| model_from_file_name(path)),
        split: field("split").or(name_split).with_context(|| {
            format!(
                "{}: cannot tell the split (no pass@k file and no `--bigcodebench-{{split}}--` in the name)",
                path.display()
            )
        })?,
        subset: field("subset").or(name_subset).unwrap_or_else(|| "full".into()),
        pass_at_1,
        tasks: counts.len(),
        date: run.date.chars().take(10).collect(),
        skip_prefill: name.contains("--skip_prefill"),
        path: path.to_path_buf(),
    })
}

/// `(subset, split)` from `...--bigcodebench[-hard]-{split}--...` (`bcb_samples::labels`).
fn split_subset_from_name(name: &str) -> (Option<String>, Option<String>) {
    match bcb_samples::labels(Path::new(name)) {
        Some((subset, split)) => (
            Some(subset.as_str().to_string()),
            split.map(|s| s.as_str().to_string()),
        ),
        None => (None, None),
    }
}

/// Official-style key: `org--name--revision` -> `name` (the leaderboard keys by display name).
pub fn display_name(model: &str) -> String {
    let parts: Vec<&str> = model.split("--").collect();
    match parts.len() {
        0 | 1 => model.to_string(),
        2 => parts[0].to_string(),
        _ => parts[1..parts.len() - 1].join("--"),
    }
}

/// `org/name` when the model name has an organisation part (then it is a Hugging Face id).
fn hub_id(model: &str) -> Option<String> {
    let parts: Vec<&str> = model.split("--").collect();
    (parts.len() >= 3).then(|| format!("{}/{}", parts[0], parts[1..parts.len() - 1].join("--")))
}

/// Parameter count in billions from a name like `Llama-3-8B` or `DS-6.7B-Instruct`.
pub fn size_from_name(name: &str) -> Option<f64> {
    name.split(['-', '_']).find_map(parse_billions)
}

fn parse_billions(token: &str) -> Option<f64> {
    let num = token.strip_suffix(['B', 'b'])?;
    if num.is_empty() || !num.chars().next()?.is_ascii_digit() {
        return None;
    }
    num.parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0 && *x < 10_000.0)
}

/// The leaderboard file for one subset: entries of that subset merged per model. `meta` may
/// give any field per display name (link, open-data, prompted, moe, size, act_param, date,
/// prefill) and wins over what is inferred.
pub fn results_json(
    entries: &[Entry],
    subset: &str,
    meta: &Map<String, Value>,
) -> Map<String, Value> {
    let mut by_model: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.subset == subset) {
        by_model.entry(e.model.clone()).or_default().push(e);
    }
    let mut out = Map::new();
    for (model, list) in by_model {
        let name = display_name(&model);
        let pct = |split: &str| {
            list.iter()
                .filter(|e| e.split == split)
                .max_by(|a, b| a.date.cmp(&b.date))
                .map(|e| Value::from((e.pass_at_1 * 1000.0).round() / 10.0))
                .unwrap_or(Value::Null)
        };
        let size = size_from_name(&name).map(number).unwrap_or(Value::Null);
        let mut m = Map::new();
        m.insert(
            "link".into(),
            hub_id(&model)
                .map(|id| format!("https://huggingface.co/{id}"))
                .unwrap_or_default()
                .into(),
        );
        m.insert("open-data".into(), "None".into());
        let mut p = Map::new();
        p.insert("instruct".into(), pct("instruct"));
        p.insert("complete".into(), pct("complete"));
        m.insert("pass@1".into(), Value::Object(p));
        m.insert("prompted".into(), true.into());
        m.insert("moe".into(), false.into());
        m.insert("size".into(), size.clone());
        m.insert("act_param".into(), size);
        let date = list.iter().map(|e| e.date.as_str()).max().unwrap_or("");
        m.insert("date".into(), date.into());
        m.insert(
            "prefill".into(),
            (!list.iter().any(|e| e.skip_prefill)).into(),
        );
        if let Some(Value::Object(over)) = meta.get(&name) {
            for (k, v) in over {
                if k == "pass@1" {
                    continue;
                }
                if m.contains_key(k) {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        out.insert(name, Value::Object(m));
    }
    out
}

/// Integral sizes as JSON integers (like the official file: `15`, `6.7`).
fn number(x: f64) -> Value {
    if x.fract() == 0.0 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// Markdown table: one row per model, pass@1 (percent) per split and subset.
pub fn render_markdown(entries: &[Entry]) -> String {
    let rows = table_rows(entries);
    let mut s = String::from("| model | complete | instruct | hard complete | hard instruct | date |\n|---|---|---|---|---|---|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r[0], r[1], r[2], r[3], r[4], r[5]
        ));
    }
    s
}

/// CSV with the same columns as the markdown table.
pub fn render_csv(entries: &[Entry]) -> String {
    let mut s = String::from("model,complete,instruct,hard_complete,hard_instruct,date\n");
    for r in table_rows(entries) {
        let cells: Vec<String> = r.iter().map(|c| crate::tables::csv_cell(c)).collect();
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    s
}

fn table_rows(entries: &[Entry]) -> Vec<[String; 6]> {
    let mut models: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        models.entry(&e.model).or_default().push(e);
    }
    let mut rows: Vec<(f64, [String; 6])> = models
        .into_iter()
        .map(|(model, list)| {
            let get = |subset: &str, split: &str| {
                list.iter()
                    .filter(|e| e.subset == subset && e.split == split)
                    .max_by(|a, b| a.date.cmp(&b.date))
                    .map(|e| e.pass_at_1)
            };
            let cell = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}", 100.0 * v));
            let key = get("full", "complete").unwrap_or(-1.0);
            let date = list
                .iter()
                .map(|e| e.date.as_str())
                .max()
                .unwrap_or("")
                .to_string();
            (
                key,
                [
                    model.to_string(),
                    cell(get("full", "complete")),
                    cell(get("full", "instruct")),
                    cell(get("hard", "complete")),
                    cell(get("hard", "instruct")),
                    date,
                ],
            )
        })
        .collect();
    // Best first by full/complete pass@1, then by name.
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1[0].cmp(&b.1[0])));
    rows.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes() {
        assert_eq!(
            display_name("NousResearch--Hermes-2-Theta-Llama-3-8B--main"),
            "Hermes-2-Theta-Llama-3-8B"
        );
        assert_eq!(display_name("gpt-4o--main"), "gpt-4o");
        assert_eq!(size_from_name("Hermes-2-Theta-Llama-3-8B"), Some(8.0));
        assert_eq!(size_from_name("Magicoder-S-DS-6.7B"), Some(6.7));
        assert_eq!(size_from_name("Phi-4-multimodal-instruct"), None);
        assert_eq!(size_from_name("CodeLlama-70B-Instruct"), Some(70.0));
        assert_eq!(
            split_subset_from_name("m--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated_eval_results.json"),
            (Some("hard".into()), Some("instruct".into()))
        );
    }
}
