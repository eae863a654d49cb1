//! Python `str` semantics the original relies on (`strip`, `splitlines`), so that our byte
//! output matches its output exactly.

/// `str.isspace()`: Rust's White_Space plus the four ASCII separators U+001C..U+001F.
pub fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// `str.splitlines()` (no `keepends`): splits on \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85,
/// U+2028 and U+2029; a trailing line break does not start a new (empty) line.
pub fn py_splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let brk = matches!(
            c,
            '\n' | '\r'
                | '\u{b}'
                | '\u{c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if brk {
            out.push(&s[start..i]);
            let mut next = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(_, '\n')) = it.peek() {
                    it.next();
                    next += 1;
                }
            }
            start = next;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_like_python() {
        assert_eq!(py_splitlines("a\r\nb\rc\n"), ["a", "b", "c"]);
        assert_eq!(py_splitlines("a\n\nb"), ["a", "", "b"]);
        assert_eq!(py_splitlines(""), Vec::<&str>::new());
        assert_eq!(py_splitlines("\n"), [""]);
        assert_eq!(py_splitlines("x\u{2028}y\u{c}z"), ["x", "y", "z"]);
    }

    #[test]
    fn strip_like_python() {
        assert_eq!(py_strip("\u{1f} \t x \u{a0}\u{3000}"), "x");
        assert_eq!(py_strip("\u{200b}x"), "\u{200b}x"); // zero-width space is not whitespace
    }
}
