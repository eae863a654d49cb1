//! bcb's own verdict texts. A refusal, a forged result, a reward hack or a memory kill puts
//! one of these at the start of `details["ALL"]`: the only trace of it a result file keeps,
//! so reports read it back. Written and read through [`Marker`] only, never as a literal.

/// What bcb, not the sample's tests, decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    /// The tamper scan refused to run the sample.
    TamperRefused,
    /// The sample forged its result; the integrity check caught it.
    IntegrityFailed,
    /// The run-time watch saw a reward hack (`--hack-policy fail`).
    RewardHack,
    /// The memory limit killed the sample.
    MemoryLimit,
    /// The sample kept forking at its process limit and was ended there.
    ProcessLimit,
}

impl Marker {
    pub const EVERY: [Marker; 5] = [
        Marker::TamperRefused,
        Marker::IntegrityFailed,
        Marker::RewardHack,
        Marker::MemoryLimit,
        Marker::ProcessLimit,
    ];

    /// The text every details string of this marker starts with.
    pub const fn prefix(self) -> &'static str {
        match self {
            Marker::TamperRefused => "bcb: refused by the tamper scan",
            Marker::IntegrityFailed => "bcb: result integrity check failed",
            Marker::RewardHack => "bcb: reward hack",
            Marker::MemoryLimit => "bcb: killed by the memory limit",
            Marker::ProcessLimit => "bcb: ended at the process limit (a process bomb)",
        }
    }

    /// The details text: the prefix, then `: ` and what was found, if anything.
    pub fn text(self, found: &str) -> String {
        if found.is_empty() {
            self.prefix().to_string()
        } else {
            format!("{}: {found}", self.prefix())
        }
    }

    /// The marker `all` starts with, and what follows it (its `: ` trimmed).
    pub fn read(all: &str) -> Option<(Marker, &str)> {
        Marker::EVERY.into_iter().find_map(|m| {
            let rest = all.strip_prefix(m.prefix())?;
            Some((m, rest.trim_start_matches(':').trim_start()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Marker;

    #[test]
    fn every_marker_reads_back_what_it_wrote() {
        for m in Marker::EVERY {
            assert_eq!(Marker::read(&m.text("x (line 3)")), Some((m, "x (line 3)")));
            assert_eq!(Marker::read(&m.text("")), Some((m, "")));
        }
        assert_eq!(Marker::read("Traceback: bcb: reward hack"), None);
    }
}
