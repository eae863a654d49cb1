//! Reports over BigCodeBench result files (ours or the original's): why samples failed (one
//! typed classifier), which libraries and domains are weak, whether one run really beats
//! another, leaderboard tables, and a self-contained HTML page. No printing: every function
//! returns values or rendered text.

pub mod classify;
pub mod compare;
pub mod domains;
pub mod html;
pub mod leaderboard;
pub mod results;
pub mod stats;
pub mod summary;
pub mod tables;

pub use classify::{classify, Failure, FailureClass};
pub use domains::Domain;
pub use results::{RunResults, Sample, Status};
pub use summary::Report;
