//! The verdict cache across runs, content-addressed: a verdict is reused when the same
//! program meets the same task's tests under the same time limit, limits and environment.
//!
//! Layout: `{cache}/verdicts/{env}/{segment}.jsonl`. `env` digests everything a run shares
//! that can change a verdict (limits, time settings, the eval env's lock and the harness — see
//! [`Settings::execution_key`] — and the sandbox protections in force); each segment is a
//! journal (the same header and reader as run journals) of the verdicts one run executed,
//! each record keyed by [`entry_key`] (the task's test code and entry point, the job's time
//! limit and the program digest). A run that executed something writes one new segment when
//! its samples phase ends ([`VerdictCache::flush`]); a long-lived session (`bcb serve`)
//! instead appends each verdict to its own segment as it arrives
//! ([`VerdictCache::append_pending`], synced in groups), so a killed server loses at most the
//! last moments. Segments that served hits are touched; the oldest segments go first when the
//! whole cache is over its size bound.
//!
//! What is cached ([`cacheable`]) is decided by measurement (README, "Verdict cache"): passes
//! and ordinary failures are; timeouts, kills (memory limit, signals) and any key whose
//! verdict changed within the run are not.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use anyhow::Context;
use bcb_execute::{Job, JobId, Outcome, Remark, Status};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::journal::{read_records, JournalHeader};
use crate::settings::Settings;
use bcb_samples::JsonlAppender;

/// Bumped when what a key covers changes; older entries are then never found.
const CACHE_FORMAT: u32 = 1;

/// Default size bound of the whole cache (all environments).
pub const DEFAULT_MAX_MB: u64 = 256;

/// One cached verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheRecord {
    /// [`entry_key`] of the job.
    pub key: String,
    /// The job that produced it (for `bcb cache stats` and debugging).
    pub id: JobId,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A live segment's word that a key it wrote changed status later in the process: earlier
/// records of the key are dropped on load. (No `id` or verdict: readers that do not know
/// tombstones skip the line instead of reading a verdict into it.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Tombstone {
    key: String,
    unstable: bool,
}

/// A line of a segment.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SegmentLine {
    Verdict(CacheRecord),
    Tombstone(Tombstone),
}

/// The key of a job within an environment: the task's tests (test code, entry point), the
/// job's time limit, and the program as executed.
pub fn entry_key(job: &Job) -> String {
    let mut h = sha2::Sha256::new();
    for part in [
        job.test.as_bytes(),
        job.entry_point.as_bytes(),
        &job.time_limit.as_nanos().to_le_bytes(),
        job.id.digest.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    hex::encode(&h.finalize()[..16])
}

/// Whether a verdict may be reused by later runs. Timeouts depend on the machine's load; a
/// kill (memory limit, signal, a cold retry) may be the machine's doing too.
pub fn cacheable(outcome: &Outcome) -> bool {
    outcome.status != Status::Timeout
        && outcome
            .remark
            .as_ref()
            .is_none_or(Remark::keeps_verdict_reusable)
}

/// The cache of one environment: what earlier runs left (loaded on open), and what this run
/// adds (written by [`VerdictCache::flush`]).
pub struct VerdictCache {
    root: PathBuf,
    env: String,
    max_bytes: u64,
    /// Entry key → (verdict, index into `segments`).
    entries: HashMap<String, (Outcome, usize)>,
    segments: Vec<PathBuf>,
    state: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    /// Verdicts executed in this run; `None` when the run saw the key's status change.
    new: HashMap<String, Option<CacheRecord>>,
    /// Segments that served a hit (touched on flush, so eviction spares them).
    used: Vec<usize>,
    /// A long-lived session's own segment, opened by the first [`VerdictCache::append_pending`].
    live: Option<JsonlAppender>,
    /// Keys already in the live segment with the status written (`None`: tombstoned, never
    /// written again in this process).
    written: HashMap<String, Option<Status>>,
}

impl VerdictCache {
    /// `{cache_dir}/verdicts`, where every environment's segments live.
    pub fn root(cache_dir: &Path) -> PathBuf {
        cache_dir.join("verdicts")
    }

    /// Opens the cache of the environment `settings` (+ `sandbox`, the protections in force)
    /// describe and loads its entries; an unreadable segment is skipped.
    pub fn open(
        cache_dir: &Path,
        settings: &Settings,
        sandbox: &str,
        max_bytes: u64,
    ) -> VerdictCache {
        let mut h = sha2::Sha256::new();
        h.update(
            format!(
                "bcb-verdicts-{CACHE_FORMAT} {} sandbox={sandbox}",
                settings.execution_key()
            )
            .as_bytes(),
        );
        let env = hex::encode(&h.finalize()[..16]);
        let root = Self::root(cache_dir);
        let mut segments: Vec<PathBuf> = std::fs::read_dir(root.join(&env))
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        segments.sort();
        let mut entries = HashMap::new();
        for (i, seg) in segments.iter().enumerate() {
            for line in read_records::<SegmentLine>(seg, &env) {
                match line {
                    SegmentLine::Verdict(r) => {
                        entries.insert(r.key, (r.outcome, i));
                    }
                    SegmentLine::Tombstone(t) => {
                        entries.remove(&t.key);
                    }
                }
            }
        }
        VerdictCache {
            root,
            env,
            max_bytes,
            entries,
            segments,
            state: Mutex::new(Pending::default()),
        }
    }

    /// Entries loaded from earlier runs.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// An earlier run's verdict for `job`, if cached.
    pub fn get(&self, job: &Job) -> Option<&Outcome> {
        let (outcome, seg) = self.entries.get(&entry_key(job))?;
        self.state.lock().unwrap().used.push(*seg);
        Some(outcome)
    }

    /// Notes a verdict executed now; kept for [`flush`](Self::flush) if [`cacheable`] and the
    /// run gives its key no other status.
    pub fn record(&self, job: &Job, outcome: &Outcome) {
        let key = entry_key(job);
        let mut st = self.state.lock().unwrap();
        let slot = st.new.entry(key.clone()).or_insert_with(|| {
            Some(CacheRecord {
                key,
                id: job.id.clone(),
                outcome: outcome.clone(),
            })
        });
        let unstable = slot
            .as_ref()
            .is_some_and(|r| r.outcome.status != outcome.status);
        if unstable || !cacheable(outcome) {
            *slot = None;
        }
    }

    /// Writes this run's cacheable verdicts as one new segment, touches the segments that
    /// served hits, then evicts the oldest segments while the cache is over its bound.
    /// Returns the number of records written.
    pub fn flush(&self) -> anyhow::Result<usize> {
        let mut st = self.state.lock().unwrap();
        let mut records: Vec<CacheRecord> = st.new.drain().filter_map(|(_, r)| r).collect();
        let used = std::mem::take(&mut st.used);
        drop(st);
        if records.is_empty() && used.is_empty() {
            return Ok(0);
        }
        let now = SystemTime::now();
        self.touch(used, now);
        let written = records.len();
        if !records.is_empty() {
            records.sort_by(|a, b| a.id.cmp(&b.id));
            let mut text = serde_json::to_vec(&JournalHeader::new(&self.env))?;
            text.push(b'\n');
            for r in &records {
                text.extend(serde_json::to_vec(r)?);
                text.push(b'\n');
            }
            let path = self.new_segment_path(now);
            bcb_pyjson::write_atomic(&path, &text)
                .with_context(|| format!("cannot write the verdict cache {}", path.display()))?;
        }
        evict(&self.root, self.max_bytes)?;
        Ok(written)
    }

    /// Appends what [`record`](Self::record) noted since the last call to this process's own
    /// segment (created, and the cache trimmed to its bound, on first use): one line per
    /// verdict, each in the kernel when this returns (a SIGKILL loses nothing written), synced
    /// to disk in groups (`JsonlAppender`). A key whose status changed after it was written
    /// gets a tombstone, so it is not reused. Returns the records appended.
    pub fn append_pending(&self) -> anyhow::Result<usize> {
        let mut st = self.state.lock().unwrap();
        let pending: Vec<(String, Option<CacheRecord>)> = st.new.drain().collect();
        let used = std::mem::take(&mut st.used);
        self.touch(used, SystemTime::now());
        let mut lines: Vec<SegmentLine> = Vec::new();
        for (key, rec) in pending {
            let before = st.written.get(&key).copied();
            let line = match (rec, before) {
                // New: written.
                (Some(r), None) => {
                    st.written.insert(key, Some(r.outcome.status));
                    SegmentLine::Verdict(r)
                }
                // Already written with this status, or already tombstoned, or never written.
                (Some(r), Some(Some(status))) if status == r.outcome.status => continue,
                (_, Some(None)) | (None, None) => continue,
                // Written before, and now another status or not reusable: never reuse it.
                (_, Some(Some(_))) => {
                    st.written.insert(key.clone(), None);
                    SegmentLine::Tombstone(Tombstone {
                        key,
                        unstable: true,
                    })
                }
            };
            lines.push(line);
        }
        if lines.is_empty() {
            return Ok(0);
        }
        if st.live.is_none() {
            let path = self.new_segment_path(SystemTime::now());
            let cant = || format!("cannot write the verdict cache {}", path.display());
            let (mut file, _) = JsonlAppender::open(&path).with_context(cant)?;
            file.append(&JournalHeader::new(&self.env))
                .with_context(cant)?;
            st.live = Some(file);
            evict(&self.root, self.max_bytes)?;
        }
        let file = st.live.as_mut().expect("opened above");
        for line in &lines {
            file.append(line).with_context(|| {
                format!("cannot write the verdict cache {}", file.path().display())
            })?;
        }
        Ok(lines.len())
    }

    /// A new segment's path: its time of creation, then the process id (names sort by age).
    fn new_segment_path(&self, now: SystemTime) -> PathBuf {
        let stamp = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros();
        self.root
            .join(&self.env)
            .join(format!("{stamp:020}-{}.jsonl", std::process::id()))
    }

    /// Marks segments that served hits as recently used, so eviction spares them.
    fn touch(&self, used: Vec<usize>, now: SystemTime) {
        let mut seen = std::collections::HashSet::new();
        for i in used {
            if seen.insert(i) {
                if let Ok(f) = std::fs::File::options()
                    .append(true)
                    .open(&self.segments[i])
                {
                    let _ = f.set_modified(now);
                }
            }
        }
    }
}

/// What `bcb cache stats` shows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CacheStats {
    pub environments: usize,
    pub segments: usize,
    pub records: usize,
    pub bytes: u64,
}

/// Every segment under `root` with its size and modification time.
fn segments_under(root: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let mut out = Vec::new();
    let Ok(envs) = std::fs::read_dir(root) else {
        return out;
    };
    for env in envs.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(env.path()) else {
            continue;
        };
        for f in files.filter_map(Result::ok) {
            let path = f.path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            if let Ok(meta) = f.metadata() {
                let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                out.push((path, meta.len(), mtime));
            }
        }
    }
    out
}

/// Deletes the least recently used segments until the cache under `root` fits `max_bytes`.
/// Returns the segments removed.
pub fn evict(root: &Path, max_bytes: u64) -> anyhow::Result<usize> {
    let mut segs = segments_under(root);
    let mut total: u64 = segs.iter().map(|s| s.1).sum();
    segs.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    let mut removed = 0;
    for (path, len, _) in segs {
        if total <= max_bytes {
            break;
        }
        std::fs::remove_file(&path).with_context(|| format!("cannot evict {}", path.display()))?;
        tracing::debug!("verdict cache: evicted {}", path.display());
        total -= len;
        removed += 1;
    }
    Ok(removed)
}

/// Sizes of the cache under `root`.
pub fn stats(root: &Path) -> CacheStats {
    let segs = segments_under(root);
    let mut envs = std::collections::HashSet::new();
    let mut s = CacheStats::default();
    for (path, len, _) in &segs {
        envs.insert(path.parent().map(Path::to_path_buf));
        s.segments += 1;
        s.bytes += len;
        s.records += std::fs::read(path)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count().saturating_sub(1))
            .unwrap_or(0);
    }
    s.environments = envs.len();
    s
}

/// Removes the whole cache under `root`; returns what it held.
pub fn clean(root: &Path) -> anyhow::Result<CacheStats> {
    let before = stats(root);
    if root.exists() {
        std::fs::remove_dir_all(root)
            .with_context(|| format!("cannot remove {}", root.display()))?;
    }
    Ok(before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_execute::Details;

    fn settings() -> Settings {
        Settings {
            split: bcb_dataset::Split::Complete,
            calibrated: true,
            min_time_limit: 1.0,
            base_timeout: 240.0,
            limits: Default::default(),
            runtime: "test".into(),
            tamper: Default::default(),
            hacks: Default::default(),
        }
    }

    use crate::test_support::job;

    fn outcome(status: Status) -> Outcome {
        Outcome::new(status, Details::default())
    }

    #[test]
    fn live_appends_are_read_back_and_a_status_change_is_a_tombstone() {
        let dir = tempfile::tempdir().unwrap();
        let open = || VerdictCache::open(dir.path(), &settings(), "none", 1 << 30);
        let live = open();
        live.record(&job("a"), &outcome(Status::Pass));
        live.record(&job("b"), &outcome(Status::Fail));
        live.record(&job("slow"), &outcome(Status::Timeout));
        assert_eq!(live.append_pending().unwrap(), 2);
        let seen = open();
        assert_eq!(seen.len(), 2, "written before the process ends");
        assert!(seen
            .get(&job("a"))
            .is_some_and(|o| o.status == Status::Pass));
        assert!(seen.get(&job("slow")).is_none());
        // The same program again with another status: it is not reusable any more.
        live.record(&job("a"), &outcome(Status::Fail));
        live.record(&job("b"), &outcome(Status::Fail));
        assert_eq!(
            live.append_pending().unwrap(),
            1,
            "one tombstone, b unchanged"
        );
        live.record(&job("a"), &outcome(Status::Pass));
        assert_eq!(
            live.append_pending().unwrap(),
            0,
            "a tombstoned key stays out"
        );
        let after = open();
        assert!(after.get(&job("a")).is_none());
        assert!(after.get(&job("b")).is_some());
        assert_eq!(
            std::fs::read_dir(after.root.join(&after.env))
                .unwrap()
                .count(),
            1,
            "one segment for the process"
        );
    }
}
