//! The journal writer: every verdict of one phase appended durably the moment it arrives, so
//! a killed run loses nothing (see `bcb_eval::journal` for the format and the reader).

use std::path::{Path, PathBuf};

use anyhow::Context;
use bcb_eval::journal::{JournalHeader, JournalRecord};
use bcb_eval::{Event, Phase, Sink};
use bcb_samples::JsonlAppender;

pub struct JournalSink {
    path: PathBuf,
    header: JournalHeader,
    /// The phases it records (a shard's journal takes both).
    phases: Vec<Phase>,
    /// Delete the journal when the run is finished (its content is in the result files).
    drop_when_finished: bool,
    /// Only jobs (and the end) of this samples file, when a run has several.
    samples: Option<PathBuf>,
    /// Opened when the phase starts, not before: the session may rewrite the file first.
    file: Option<JsonlAppender>,
}

impl JournalSink {
    pub fn new(
        path: &Path,
        header: JournalHeader,
        phases: &[Phase],
        drop_when_finished: bool,
    ) -> Self {
        JournalSink {
            path: path.to_path_buf(),
            header,
            phases: phases.to_vec(),
            drop_when_finished,
            samples: None,
            file: None,
        }
    }

    /// Records only the jobs of `samples` (a run of several files has one journal each).
    pub fn for_samples(mut self, samples: &Path) -> Self {
        self.samples = Some(samples.to_path_buf());
        self
    }

    fn mine(&self, samples: Option<&Path>) -> bool {
        match (&self.samples, samples) {
            (Some(own), Some(theirs)) => own == theirs,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    fn open(&mut self) -> anyhow::Result<()> {
        let cant = || format!("cannot open journal {}", self.path.display());
        // A journal of other inputs (or none) is started afresh, emptied rather than removed:
        // the run may hold a lock on this file (`bcb evaluate`, one run a samples file).
        let keep = bcb_eval::journal::read_header(&self.path)
            .is_some_and(|h| h.bcb_journal == self.header.bcb_journal && h.key == self.header.key);
        if !keep {
            match std::fs::OpenOptions::new().write(true).open(&self.path) {
                Ok(file) => file.set_len(0).with_context(cant)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(cant),
            }
        }
        let (mut file, _) = JsonlAppender::open(&self.path).with_context(cant)?;
        if !keep {
            file.append(&self.header).with_context(cant)?;
        }
        self.file = Some(file);
        Ok(())
    }
}

impl Sink for JournalSink {
    fn handle(&mut self, event: &Event) -> anyhow::Result<()> {
        match event {
            Event::PhaseStarted { phase, .. }
                if self.phases.contains(phase) && self.file.is_none() =>
            {
                self.open()?
            }
            Event::JobDone {
                phase,
                job,
                outcome,
                samples,
                ..
            } if self.phases.contains(phase) && self.mine(*samples) => {
                let file = match self.file.as_mut() {
                    Some(f) => f,
                    None => {
                        self.open()?;
                        self.file.as_mut().expect("just opened")
                    }
                };
                let record = JournalRecord {
                    id: job.id.clone(),
                    outcome: (*outcome).clone(),
                };
                file.append(&record)
                    .with_context(|| format!("cannot write journal {}", self.path.display()))?;
            }
            // The tail of a burst of verdicts is synced when its phase ends.
            Event::PhaseFinished { phase } if self.phases.contains(phase) => {
                if let Some(file) = self.file.as_mut() {
                    file.sync_now()
                        .with_context(|| format!("cannot sync journal {}", self.path.display()))?;
                }
            }
            Event::Finished(report)
                if self.drop_when_finished
                    && !report.loaded_existing
                    && self.mine(Some(&report.samples_path)) =>
            {
                self.file = None;
                std::fs::remove_file(&self.path).ok();
            }
            _ => {}
        }
        Ok(())
    }
}
