//! Why a sample failed: one enum, one function, used by every report, `compare` and `inspect`.
//!
//! Input is what result files hold: the status and `details` (failing test -> traceback;
//! `ALL` -> the exception text when the module itself failed to run). bcb's own decisions
//! start `details["ALL"]` with a [`Marker`]; tracebacks are read for the last exception's
//! type, and searched for environment causes (no network, no NLTK data) that are not the
//! model's fault.

use bcb_executor::{Marker, Remark};
use serde::Serialize;

use crate::results::{Sample, Status};

/// A failure's cause. Variants in display order; `Env*` are the environment's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The code does not parse (SyntaxError, IndentationError, TabError).
    SyntaxError,
    /// ImportError / ModuleNotFoundError: a missing module or name in a module.
    ImportError,
    /// NameError (incl. UnboundLocalError) or AttributeError.
    NameOrAttributeError,
    /// Any other exception; its type is in [`Failure::exception`].
    OtherException,
    /// Only AssertionErrors: the code ran and gave a wrong answer.
    AssertionFailure,
    /// The time limit (status `timeout`, or the harness timer firing inside a test).
    Timeout,
    /// Killed by the memory limit, or a MemoryError.
    MemoryLimit,
    /// Ended at the process limit: it kept forking there (a process bomb).
    ProcessLimit,
    /// bcb's tamper scan refused to run the sample.
    TamperingRefused,
    /// The sample forged its result and the integrity check caught it.
    TamperingDetected,
    /// The run-time watch saw a reward hack (a value that agrees with anything, unittest's
    /// control flow driven by the sample, trace hooks or frame walks, a result rewritten).
    RewardHack,
    /// No network here: DNS, unreachable network, refused connection.
    EnvNetwork,
    /// NLTK (or TextBlob) data missing.
    EnvNltkData,
    /// The task's canonical solution fails here too, so the verdict says nothing of the model.
    EnvGroundTruth,
}

impl FailureClass {
    // No "output cap" class: output past `--output-cap` is dropped, as upstream swallows all
    // output, and never fails a sample.
    pub const ALL: [FailureClass; 14] = [
        FailureClass::SyntaxError,
        FailureClass::ImportError,
        FailureClass::NameOrAttributeError,
        FailureClass::OtherException,
        FailureClass::AssertionFailure,
        FailureClass::Timeout,
        FailureClass::MemoryLimit,
        FailureClass::ProcessLimit,
        FailureClass::TamperingRefused,
        FailureClass::TamperingDetected,
        FailureClass::RewardHack,
        FailureClass::EnvNetwork,
        FailureClass::EnvNltkData,
        FailureClass::EnvGroundTruth,
    ];

    /// Not the model's fault: shown apart in every report.
    pub fn is_environment(self) -> bool {
        matches!(
            self,
            FailureClass::EnvNetwork | FailureClass::EnvNltkData | FailureClass::EnvGroundTruth
        )
    }

    /// Stable machine name (also the JSON/CSV value).
    pub fn key(self) -> &'static str {
        match self {
            FailureClass::SyntaxError => "syntax_error",
            FailureClass::ImportError => "import_error",
            FailureClass::NameOrAttributeError => "name_or_attribute_error",
            FailureClass::OtherException => "other_exception",
            FailureClass::AssertionFailure => "assertion_failure",
            FailureClass::Timeout => "timeout",
            FailureClass::MemoryLimit => "memory_limit",
            FailureClass::ProcessLimit => "process_limit",
            FailureClass::TamperingRefused => "tampering_refused",
            FailureClass::TamperingDetected => "tampering_detected",
            FailureClass::RewardHack => "reward_hack",
            FailureClass::EnvNetwork => "env_network",
            FailureClass::EnvNltkData => "env_nltk_data",
            FailureClass::EnvGroundTruth => "env_ground_truth",
        }
    }

    /// Words for people.
    pub fn label(self) -> &'static str {
        match self {
            FailureClass::SyntaxError => "syntax error",
            FailureClass::ImportError => "import error / missing module",
            FailureClass::NameOrAttributeError => "name or attribute error",
            FailureClass::OtherException => "other exception",
            FailureClass::AssertionFailure => "assertion failure (wrong answer)",
            FailureClass::Timeout => "timeout",
            FailureClass::MemoryLimit => "memory limit",
            FailureClass::ProcessLimit => "process limit (a process bomb)",
            FailureClass::TamperingRefused => "tampering refused",
            FailureClass::TamperingDetected => "tampering detected (forged result)",
            FailureClass::RewardHack => "reward hack detected",
            FailureClass::EnvNetwork => "environment: network unreachable",
            FailureClass::EnvNltkData => "environment: NLTK data missing",
            FailureClass::EnvGroundTruth => "environment: ground truth fails",
        }
    }
}

/// A classified failure: the class, the exception type where one was found, and a one-line
/// excerpt to show as the example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub class: FailureClass,
    /// e.g. `ValueError`, `pandas.errors.EmptyDataError`; `None` for timeouts and markers.
    pub exception: Option<String>,
    /// The test it came from (`ALL` for the module) and the exception line, shortened.
    pub excerpt: String,
}

/// Classifies one sample; `None` when it passed. `gt_failing` says whether the task's
/// ground truth fails in this environment (from a ground-truth run or `failed_tasks`).
pub fn classify(sample: &Sample, gt_failing: bool) -> Option<Failure> {
    let remark = sample.details.module_error().and_then(remark_of_marker);
    classify_with(sample, remark.as_ref(), gt_failing)
}

/// The executor's remark a result file's `details["ALL"]` marker stands for (result files
/// carry no remark of their own; bcb's executors write these markers).
pub fn remark_of_marker(all: &str) -> Option<Remark> {
    match Marker::read(all)? {
        (Marker::MemoryLimit, _) => Some(Remark::KilledByMemoryLimit),
        (Marker::ProcessLimit, _) => Some(Remark::KilledAtProcessLimit),
        (Marker::IntegrityFailed, problem) => Some(Remark::Integrity {
            problem: problem.trim().to_string(),
        }),
        _ => None,
    }
}

/// The failure class an executor's remark decides by itself, if any.
pub fn class_of_remark(remark: &Remark) -> Option<FailureClass> {
    match remark.cause() {
        Remark::KilledByMemoryLimit => Some(FailureClass::MemoryLimit),
        Remark::KilledAtProcessLimit => Some(FailureClass::ProcessLimit),
        Remark::Integrity { .. } => Some(FailureClass::TamperingDetected),
        _ => None,
    }
}

/// [`classify`] with the executor's remark, where known (journals, a live session): a
/// remark that decides a class wins over what the details say.
pub fn classify_with(
    sample: &Sample,
    remark: Option<&Remark>,
    gt_failing: bool,
) -> Option<Failure> {
    if sample.status == Status::Pass {
        return None;
    }
    let all = sample.details.module_error();
    if let Some(class) = remark.and_then(class_of_remark) {
        let text = all.map_or_else(
            || remark.map(ToString::to_string).unwrap_or_default(),
            str::to_string,
        );
        return Some(failure(class, None, "ALL", &text));
    }
    // bcb's own markers are exact: they win over everything else.
    if let Some(all) = all {
        let class = match Marker::read(all) {
            Some((Marker::TamperRefused, _)) => Some(FailureClass::TamperingRefused),
            Some((Marker::RewardHack, _)) => Some(FailureClass::RewardHack),
            _ => None,
        };
        if let Some(class) = class {
            return Some(failure(class, None, "ALL", all));
        }
    }
    // An environment cause (no network, no NLTK data) in some test makes the verdict the
    // environment's, unless another test failed with the model's own exception (a NameError
    // next to a DNS failure is still the model's bug). Assertions may be knock-on effects.
    let env = sample
        .details
        .iter()
        .find_map(|(test, text)| environment_cause(text).map(|class| (class, test, text)));
    let model_exception = sample.details.iter().find_map(|(test, text)| {
        if test == bcb_executor::ALL || environment_cause(text).is_some() {
            return None;
        }
        let (exc, msg) = last_exception(text)?;
        let class = class_of_exception(exc, msg);
        (class != FailureClass::AssertionFailure).then_some((class, exc, msg, test))
    });
    if let (Some((class, test, text)), None) = (env, &model_exception) {
        let exc = last_exception(text).map(|(t, _)| t.to_string());
        return Some(failure(class, exc, test, env_line(text)));
    }
    // Tampering is the model's doing even where the ground truth fails; a visible network or
    // NLTK cause (above) says more; anything else on such a task is the environment's.
    if gt_failing {
        let first = sample.details.iter().next();
        return Some(failure(
            FailureClass::EnvGroundTruth,
            None,
            first.map_or("", |(k, _)| k),
            first.map_or("the canonical solution fails here too", |(_, v)| v),
        ));
    }
    if sample.details.is_empty() {
        let class = match sample.status {
            Status::Timeout => FailureClass::Timeout,
            _ => FailureClass::OtherException,
        };
        let text = match sample.status {
            Status::Timeout => "no test finished within the time limit",
            _ => "failed without details",
        };
        return Some(failure(class, None, "", text));
    }
    if let Some(all) = all {
        let (exc, class) = classify_module_error(all);
        return Some(failure(class, exc, "ALL", all));
    }
    // Per test: the first non-assertion exception decides; only assertions -> wrong answer.
    if let Some((class, exc, msg, test)) = model_exception {
        return Some(failure(
            class,
            Some(exc.to_string()),
            test,
            &exception_line(exc, msg),
        ));
    }
    let first_assertion = sample.details.iter().find_map(|(test, text)| {
        let (exc, msg) = last_exception(text)?;
        (class_of_exception(exc, msg) == FailureClass::AssertionFailure).then_some((test, exc, msg))
    });
    if let Some((test, exc, msg)) = first_assertion {
        return Some(failure(
            FailureClass::AssertionFailure,
            Some(exc.to_string()),
            test,
            &exception_line(exc, msg),
        ));
    }
    if sample.status == Status::Timeout {
        return Some(failure(FailureClass::Timeout, None, "", "time limit"));
    }
    let (test, text) = sample.details.iter().next().unwrap_or(("", ""));
    Some(failure(FailureClass::OtherException, None, test, text))
}

fn failure(class: FailureClass, exception: Option<String>, test: &str, text: &str) -> Failure {
    // The exception line of a traceback says the most; else the last non-empty line.
    let exc_line = last_exception(text).map(|(e, m)| exception_line(e, m));
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    let line = match &exc_line {
        Some(l) => l.as_str(),
        None if last.is_empty() => text.trim(),
        None => last,
    };
    let line = strip_ansi(line);
    let mut excerpt: String = line.chars().take(200).collect();
    if line.chars().count() > 200 {
        excerpt.push('…');
    }
    if !test.is_empty() {
        excerpt = format!("{test}: {excerpt}");
    }
    Failure {
        class,
        exception,
        excerpt,
    }
}

fn exception_line(exc: &str, msg: &str) -> String {
    if msg.is_empty() {
        exc.to_string()
    } else {
        format!("{exc}: {msg}")
    }
}

/// Drops terminal colour codes (NLTK colours its resource names).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ ... final byte in @..~
            if chars.next() == Some('[') {
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The class of an exception type (the last traceback's), given its message.
fn class_of_exception(exc: &str, msg: &str) -> FailureClass {
    let short = exc.rsplit('.').next().unwrap_or(exc);
    match short {
        "SyntaxError" | "IndentationError" | "TabError" => FailureClass::SyntaxError,
        "ImportError" | "ModuleNotFoundError" => FailureClass::ImportError,
        "NameError" | "UnboundLocalError" | "AttributeError" => FailureClass::NameOrAttributeError,
        "AssertionError" => FailureClass::AssertionFailure,
        "MemoryError" => FailureClass::MemoryLimit,
        // The original's per-test timer (`time_limit`) raises its own TimeoutException.
        "TimeoutException" if msg.contains("Timed out") => FailureClass::Timeout,
        _ => FailureClass::OtherException,
    }
}

/// `details["ALL"]` holds `str(exception)` without its type: infer it from the wording.
fn classify_module_error(text: &str) -> (Option<String>, FailureClass) {
    let t = text.trim();
    // SyntaxError's str() ends with "(file, line N)".
    let syntax_words = [
        "invalid syntax",
        "unexpected indent",
        "unindent does not match",
        "expected an indented block",
        "unterminated string",
        "was never closed",
        "unmatched ",
        "inconsistent use of tabs",
    ];
    if (t.ends_with(')') && t.contains("(__test__.py, line "))
        || syntax_words.iter().any(|w| t.contains(w))
    {
        return (Some("SyntaxError".into()), FailureClass::SyntaxError);
    }
    if t.starts_with("No module named ") {
        return (
            Some("ModuleNotFoundError".into()),
            FailureClass::ImportError,
        );
    }
    if t.starts_with("cannot import name ") {
        return (Some("ImportError".into()), FailureClass::ImportError);
    }
    if t.starts_with("name '") && t.contains("is not defined") {
        return (Some("NameError".into()), FailureClass::NameOrAttributeError);
    }
    if t.contains("has no attribute '") {
        return (
            Some("AttributeError".into()),
            FailureClass::NameOrAttributeError,
        );
    }
    if t.contains("referenced before assignment")
        || t.contains("where it is not associated with a value")
    {
        return (
            Some("UnboundLocalError".into()),
            FailureClass::NameOrAttributeError,
        );
    }
    // A traceback-shaped ALL (bcb writes full tracebacks for some module errors).
    if let Some((exc, msg)) = last_exception(t) {
        return (Some(exc.to_string()), class_of_exception(exc, msg));
    }
    (None, FailureClass::OtherException)
}

/// The type and message of the last exception in a traceback: the first unindented line
/// after the last `Traceback (most recent call last):` and its stack frames.
pub fn last_exception(text: &str) -> Option<(&str, &str)> {
    let start = text.rfind("Traceback (most recent call last):")?;
    let body = &text[start..];
    let line = body
        .lines()
        .skip(1)
        .find(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))?;
    let (exc, msg) = match line.split_once(':') {
        Some((e, m)) => (e, m.trim()),
        None => (line, ""),
    };
    let is_name = !exc.is_empty()
        && exc
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    is_name.then_some((exc, msg))
}

/// Network and NLTK failures, by the words the libraries use (from real tracebacks here).
fn environment_cause(text: &str) -> Option<FailureClass> {
    let nltk = [
        "Resource \u{1b}[93m", // nltk: "Resource <ansi>punkt<ansi> not found."
        "Please use the NLTK Downloader",
        "MissingCorpusError", // TextBlob
    ];
    if nltk.iter().any(|w| text.contains(w))
        || (text.contains("LookupError") && text.contains("Resource") && text.contains("not found"))
    {
        return Some(FailureClass::EnvNltkData);
    }
    let network = [
        "Temporary failure in name resolution",
        "Name or service not known",
        "nodename nor servname provided",
        "Network is unreachable",
        "No route to host",
        "Connection refused",
        "Failed to establish a new connection",
        "getaddrinfo failed",
        "Max retries exceeded with url",
    ];
    if network.iter().any(|w| text.contains(w)) {
        return Some(FailureClass::EnvNetwork);
    }
    None
}

/// The line that shows the environment cause (for the example), else the last line.
fn env_line(text: &str) -> &str {
    let needles = [
        "Resource",
        "name resolution",
        "not known",
        "unreachable",
        "refused",
        "new connection",
        "MissingCorpusError",
    ];
    text.lines()
        .find(|l| needles.iter().any(|n| l.contains(n)))
        .map(str::trim)
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executor_remarks_decide_the_class_and_markers_read_back_as_remarks() {
        assert_eq!(
            remark_of_marker(&Marker::MemoryLimit.text("")),
            Some(Remark::KilledByMemoryLimit)
        );
        assert_eq!(
            remark_of_marker(&Marker::ProcessLimit.text("")),
            Some(Remark::KilledAtProcessLimit)
        );
        assert_eq!(
            class_of_remark(&Remark::KilledAtProcessLimit),
            Some(FailureClass::ProcessLimit)
        );
        assert!(matches!(
            remark_of_marker(&Marker::IntegrityFailed.text("forged")),
            Some(Remark::Integrity { problem }) if problem == "forged"
        ));
        assert_eq!(remark_of_marker("NameError: x"), None);
        let sample = Sample {
            status: Status::Timeout,
            details: bcb_executor::Details::new(),
            solution: String::new(),
            flaky: None,
        };
        let cold = Remark::RetriedCold {
            after: Box::new(Remark::KilledByMemoryLimit),
            then: None,
        };
        let f = classify_with(&sample, Some(&cold), false).unwrap();
        assert_eq!(f.class, FailureClass::MemoryLimit);
        let f = classify_with(&sample, Some(&Remark::InSampleAlarm), false).unwrap();
        assert_eq!(f.class, FailureClass::Timeout);
    }

    #[test]
    fn last_exception_skips_frames_and_takes_the_last_traceback() {
        let tb = "Traceback (most recent call last):\n  File \"x\", line 1\nKeyError: 'a'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"__test__.py\", line 3, in f\n    g()\nValueError: bad\n";
        assert_eq!(last_exception(tb), Some(("ValueError", "bad")));
        assert_eq!(last_exception("no traceback"), None);
    }

    #[test]
    fn module_errors_without_a_type() {
        assert_eq!(
            classify_module_error("keyword argument repeated: data (__test__.py, line 15)").1,
            FailureClass::SyntaxError
        );
        assert_eq!(
            classify_module_error("name 'np' is not defined").1,
            FailureClass::NameOrAttributeError
        );
        assert_eq!(
            classify_module_error("No module named 'foo'").1,
            FailureClass::ImportError
        );
        assert_eq!(
            classify_module_error("boom").1,
            FailureClass::OtherException
        );
    }
}
