//! Request errors, classified for retrying: the shared [`bcb_http::HttpError`] under the name
//! the providers use.

pub use bcb_http::{ErrorClass, HttpError as ApiError};
