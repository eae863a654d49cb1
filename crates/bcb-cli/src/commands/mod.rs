pub mod dataset;
pub mod env;
pub mod evaluate;
pub mod generate;
pub mod inspect;
pub mod merge;
pub mod sanitize;
pub mod syncheck;
