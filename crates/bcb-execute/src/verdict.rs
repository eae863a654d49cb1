//! What a job's tests said: upstream's three statuses, and the per-test details behind a
//! failure. Rules that turn a harness report into these live with each backend
//! (`local::verdict` for the local one).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Timeout,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Timeout => "timeout",
        }
    }

    pub fn is_pass(self) -> bool {
        self == Status::Pass
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The key upstream uses for a failure of the whole module (import error, syntax error...).
pub const ALL: &str = "ALL";

/// Why tests failed, in upstream's shape: failing test method -> traceback (failures first,
/// then errors, as unittest lists them), or [`ALL`] -> the exception text when the module
/// itself raised. Order is kept: the result files list entries as they were reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    entries: Vec<(String, String)>,
}

impl Details {
    pub fn new() -> Self {
        Details::default()
    }

    /// Details of a module-level failure: `{"ALL": text}`.
    pub fn all(text: impl Into<String>) -> Self {
        let mut d = Details::new();
        d.insert(ALL, text);
        d
    }

    /// Adds or replaces one entry (a replaced entry keeps its place).
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The module-level failure text, if the module itself raised.
    pub fn module_error(&self) -> Option<&str> {
        self.get(ALL)
    }

    /// `(key, text)` in reported order, [`ALL`] included.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Failing test methods and their tracebacks, [`ALL`] excluded.
    pub fn tests(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().filter(|(k, _)| *k != ALL)
    }
}

impl std::ops::Index<&str> for Details {
    type Output = str;
    fn index(&self, key: &str) -> &str {
        self.get(key)
            .unwrap_or_else(|| panic!("no details entry `{key}`"))
    }
}

impl Serialize for Details {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (k, v) in &self.entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Details;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of test name -> traceback")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Details, A::Error> {
                let mut out = Details::new();
                while let Some((k, v)) = m.next_entry::<String, serde_json::Value>()? {
                    // Tracebacks are strings; anything else (older or foreign files) is kept
                    // as its JSON text rather than refused.
                    let text = match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    out.insert(k, text);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// What happened to one job: the verdict (status + details, as upstream records it) plus
/// timings and an executor remark that never reaches the upstream files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub status: Status,
    pub details: Details,
    /// Wall time of `suite.run` when the suite ran to the end.
    pub test_secs: Option<f64>,
    /// Wall time of the whole job as seen by the executor.
    pub wall_secs: f64,
    /// CPU time (user + system) of the sample's process tree, where the backend measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<f64>,
    /// Executor-side remark (killed by signal, memory limit, integrity check...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Reward hacks the harness's watch saw (see `hack`), under the `flag` and `fail`
    /// policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<crate::HackFlag>,
}

impl Outcome {
    /// An outcome with no timings yet.
    pub fn new(status: Status, details: Details) -> Outcome {
        Outcome {
            status,
            details,
            test_secs: None,
            wall_secs: 0.0,
            cpu_secs: None,
            note: None,
            flags: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_round_trip_in_order() {
        let text = r#"{"test_b": "tb", "test_a": "ta", "n": 3}"#;
        let d: Details = serde_json::from_str(text).unwrap();
        let keys: Vec<&str> = d.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["test_b", "test_a", "n"]);
        assert_eq!(d["n"], *"3");
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"test_b":"tb","test_a":"ta","n":"3"}"#
        );
        assert_eq!(Details::all("boom").module_error(), Some("boom"));
        assert_eq!(Details::all("boom").tests().count(), 0);
    }
}
