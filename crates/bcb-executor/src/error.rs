//! Infrastructure failures: the executor could not produce a verdict. Never a verdict
//! itself: a run retries transient ones and stops on the rest, journaling nothing false.

/// Why a job has no verdict.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExecError {
    /// Worth another try: a harness that died or did not start, a lost connection.
    #[error("{message}")]
    Transient { message: String },
    /// Retrying will not help until something is fixed; `hint` says what.
    #[error("{message}")]
    Fatal { message: String, hint: String },
}

impl ExecError {
    pub fn transient(message: impl Into<String>) -> Self {
        ExecError::Transient {
            message: message.into(),
        }
    }

    pub fn fatal(message: impl Into<String>, hint: impl Into<String>) -> Self {
        ExecError::Fatal {
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn is_transient(&self) -> bool {
        matches!(self, ExecError::Transient { .. })
    }

    /// What the user can do about it, when known.
    pub fn hint(&self) -> Option<&str> {
        match self {
            ExecError::Transient { .. } => None,
            ExecError::Fatal { hint, .. } => Some(hint),
        }
    }
}
