//! `leaderboard` output has the official `results.json` shape (../shared/leaderboard/): the
//! same keys in the same order per model and the same JSON types per field.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bcb_report::leaderboard::{render_markdown, results_json, scan};
use common::{real_samples, HERMES, PHI};
use serde_json::{Map, Value};

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "object",
    }
}

/// Field -> the JSON types the official file uses for it; plus its key order.
fn official_shape(path: &Path) -> (Vec<String>, BTreeMap<String, BTreeSet<&'static str>>) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut types: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    let mut order = None;
    for entry in v.as_object().unwrap().values() {
        let obj = entry.as_object().unwrap();
        let keys: Vec<String> = obj.keys().cloned().collect();
        assert!(
            order.get_or_insert(keys.clone()) == &keys,
            "official order differs"
        );
        for (k, x) in obj {
            types.entry(k.clone()).or_default().insert(type_name(x));
            if let Value::Object(p) = x {
                for (kk, y) in p {
                    types
                        .entry(format!("{k}.{kk}"))
                        .or_default()
                        .insert(type_name(y));
                }
            }
        }
    }
    (order.unwrap(), types)
}

fn check_shape(ours: &Map<String, Value>, official: &Path) {
    let (order, types) = official_shape(official);
    for (name, entry) in ours {
        let obj = entry.as_object().unwrap();
        assert_eq!(
            obj.keys().cloned().collect::<Vec<_>>(),
            order,
            "{name}: keys"
        );
        for (k, x) in obj {
            assert!(
                types[k].contains(type_name(x)),
                "{name}.{k}: {} not in {:?}",
                type_name(x),
                types[k]
            );
            if let Value::Object(p) = x {
                assert_eq!(
                    p.keys().collect::<Vec<_>>(),
                    ["instruct", "complete"],
                    "{name}.{k}"
                );
                for (kk, y) in p {
                    let key = format!("{k}.{kk}");
                    assert!(types[&key].contains(type_name(y)), "{name}.{key}");
                }
            }
        }
    }
}

fn copy_real(dir: &Path, real: &Path) -> PathBuf {
    let out = dir.join("results");
    std::fs::create_dir_all(out.join("nested")).unwrap();
    for (model, sub) in [(HERMES, ""), (PHI, "nested")] {
        for suffix in ["_eval_results.json.gz", "_pass_at_k.json"] {
            let name = format!("{model}{suffix}");
            std::fs::copy(real.join(&name), out.join(sub).join(&name)).unwrap();
        }
    }
    out
}

#[test]
fn real_models_in_the_official_shape() {
    let Some(real) = real_samples() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_real(tmp.path(), &real);
    let entries = scan(&dir).unwrap();
    assert_eq!(entries.len(), 2);
    let ours = results_json(&entries, "full", &Map::new());
    assert!(results_json(&entries, "hard", &Map::new()).is_empty());
    let official = real.join("../leaderboard/results.json");
    check_shape(&ours, &official);
    let hermes = &ours["Hermes-2-Theta-Llama-3-8B"];
    assert_eq!(hermes["pass@1"]["complete"], 36.5);
    assert_eq!(hermes["pass@1"]["instruct"], Value::Null);
    assert_eq!(hermes["size"], 8);
    assert_eq!(
        hermes["link"],
        "https://huggingface.co/NousResearch/Hermes-2-Theta-Llama-3-8B"
    );
    assert_eq!(hermes["date"], "2025-05-08");
    let phi = &ours["Phi-4-multimodal-instruct"];
    assert_eq!(phi["pass@1"]["complete"], 46.6);
    assert_eq!(phi["size"], Value::Null);
    // Metadata given by the user wins over what is inferred.
    let meta: Map<String, Value> = serde_json::from_str(
        r#"{"Phi-4-multimodal-instruct": {"size": 5.6, "act_param": 5.6, "open-data": "Partial"}}"#,
    )
    .unwrap();
    let ours = results_json(&entries, "full", &meta);
    check_shape(&ours, &official);
    assert_eq!(ours["Phi-4-multimodal-instruct"]["size"], 5.6);
    // The markdown table ranks by complete pass@1.
    let md = render_markdown(&entries);
    let rows: Vec<&str> = md.lines().skip(2).collect();
    assert!(
        rows[0].contains("Phi-4") && rows[0].contains("46.6"),
        "{md}"
    );
    assert!(
        rows[1].contains("Hermes") && rows[1].contains("36.5"),
        "{md}"
    );
}
