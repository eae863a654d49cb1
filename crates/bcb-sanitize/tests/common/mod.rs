pub mod answers;
pub mod real;
