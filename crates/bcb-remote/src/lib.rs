//! The remote executors: [`gradio`] (a BigCodeBench evaluator Space) and [`e2b`] (an E2B
//! sandbox running bcb's local executor). Each sends jobs in chunks through [`Chunked`] and
//! keeps the `bcb-executor` contract, so a remote run journals, retries and resumes as a
//! local one does.

mod chunked;
pub mod e2b;
pub mod gradio;

pub use chunked::*;
