//! (to be written)

/// Stub so callers compile until the sanitizer lands: returns the code unchanged.
pub fn sanitize(code: &str, entrypoint: Option<&str>) -> String {
    let _ = entrypoint;
    code.to_string()
}
