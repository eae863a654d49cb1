//! Settings: everything besides the programs that can change a verdict or the result files,
//! and the keys derived from them (caches, journals).

use bcb_dataset::Split;
use bcb_execute::Limits;
use bcb_sanitize::tamper::TamperPolicy;

/// Everything besides the programs that can change a verdict or the result files.
#[derive(Debug, Clone)]
pub struct Settings {
    pub split: Split,
    /// Execute `code_prompt + "\n    pass\n" + solution` (upstream default).
    pub calibrated: bool,
    pub min_time_limit: f64,
    pub base_timeout: f64,
    pub limits: Limits,
    /// Identifies the Python environment the verdicts come from (the lock digest of a managed
    /// env, else the interpreter path).
    pub runtime: String,
    /// What a sample the tamper scan flags gets (samples only; canonical solutions are trusted).
    pub tamper: TamperPolicy,
    /// What a reward hack detected at run time gets (canonical solutions and samples).
    pub hacks: bcb_execute::HackPolicy,
}

/// Upstream's defaults (`complete`, calibrated, 1-s minimum, 240-s base limit), bcb's
/// default limits and policies, in no named environment.
impl Default for Settings {
    fn default() -> Settings {
        Settings {
            split: Split::Complete,
            calibrated: true,
            min_time_limit: 1.0,
            base_timeout: crate::DEFAULT_BASE_TIMEOUT,
            limits: Limits::default(),
            runtime: String::new(),
            tamper: TamperPolicy::default(),
            hacks: bcb_execute::HackPolicy::default(),
        }
    }
}

impl Settings {
    /// A stable text of what changes how a program runs — time settings, limits, the
    /// environment — and so its verdict: the key of the ground-truth cache and of the verdict
    /// cache (whose entries are per program as executed, calibration included; refused
    /// samples never reach it, the tamper scan comes first).
    pub fn execution_key(&self) -> String {
        format!(
            "min_time={} base={} {} runtime={} hacks={}",
            self.min_time_limit,
            self.base_timeout,
            self.limits.key(),
            self.runtime,
            self.hacks
        )
    }

    /// A stable text of EVERYTHING that can change a sample's verdict: how it runs
    /// ([`Settings::execution_key`]), calibration and the tamper policy (a refusal is a
    /// verdict). Part of every samples journal and shard key, so a resume under another
    /// `--tamper-policy` or calibration starts afresh instead of reusing old verdicts.
    pub fn verdict_key(&self) -> String {
        format!(
            "{} calibrated={} tamper={}",
            self.execution_key(),
            self.calibrated,
            self.tamper.as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            runtime: "env".into(),
            tamper: TamperPolicy::Refuse,
            ..Settings::default()
        }
    }

    #[test]
    fn the_verdict_key_covers_tamper_policy_and_calibration_and_the_caches_do_not() {
        let base = settings();
        let warn = Settings {
            tamper: TamperPolicy::Warn,
            ..settings()
        };
        let raw = Settings {
            calibrated: false,
            ..settings()
        };
        assert_ne!(base.verdict_key(), warn.verdict_key());
        assert_ne!(base.verdict_key(), raw.verdict_key());
        assert_eq!(base.execution_key(), warn.execution_key());
        assert_eq!(base.execution_key(), raw.execution_key());
        let slower = Settings {
            base_timeout: 10.0,
            ..settings()
        };
        assert_ne!(base.execution_key(), slower.execution_key());
    }
}
