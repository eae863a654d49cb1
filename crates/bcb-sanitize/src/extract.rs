//! `code_extract`: the longest run of lines that parses, as the original picks it, but fast.
//!
//! # What the original computes
//! With `lines = text.split("\n")` and `w(i, j)` = number of lines in `i..=j` whose
//! `strip()` is non-empty, it visits every pair `i < j` in lexicographic order and keeps the
//! first pair whose span parses and whose `w` is strictly larger than the best so far
//! (starting from 0, default pair `(0, 0)`). So the answer is the lexicographically first
//! `(i, j)` among the parsable spans of maximal weight, or `(0, 0)` when no span of positive
//! weight parses (and the whole text when there is a single line).
//!
//! # How we get the same pair without O(n²) parses
//! 1. Rows in order, pruned by weight. Row `i` can only matter if some `j` has
//!    `w(i, j) > best`; `w(i, n-1)` is the largest and it only shrinks as `i` grows, so we stop
//!    at the first row where `w(i, n-1) <= best`. A later row never wins a tie (the original
//!    keeps the first), so strictly greater is the right test.
//! 2. Inside a row, weights from high to low; among the `j` of one weight (a non-blank line
//!    followed by blank lines) we test ascending `j` and stop at the first that parses. That is
//!    the row's lexicographically first maximum, so the result is the original's pair.
//! 3. Dead prefixes. For a row we compute a line `D(i)` such that *every* span `i..=j` with
//!    `j >= D(i)` fails; only `j < D(i)` are tested. `D` comes from two facts about CPython's
//!    tokenizer and grammar (`file: statement* ENDMARKER`):
//!    * The tokenizer is deterministic left to right and fails hard on some input whatever
//!      follows: an unterminated single-quoted string at the end of a line, a triple-quoted
//!      string that never closes before the end of the text, an unmatched or mismatched closing
//!      bracket, a backslash followed by something other than the line end, a character that
//!      is never valid outside strings and comments (`$ ? \` !` and typical prose punctuation
//!      such as `’ “ — …` or emoji), or an indented first line ("unexpected indent"). Such a
//!      failure on line `L` (with the row's tokenizer state) kills every `j >= L`.
//!    * Top-level statements are delimited by the tokens alone: a logical line that starts in
//!      column 0 outside brackets and strings starts a new statement, unless it continues a
//!      compound statement (`else`, `elif`, `except`, `finally`) or follows a decorator line.
//!      A statement's tokens are the same whether it is followed by more statements or by the
//!      end of the file (only NEWLINE/DEDENT/ENDMARKER follow it), so if a *complete*
//!      statement `T` (one whose successor starts at line `c`) does not parse on its own, no
//!      span containing line `c` parses: `D(i) = c`.
//!
//!    The scanner below tracks exactly the tokenizer state needed for this (strings, brackets,
//!    comments, continuations, column 0). Where it could disagree with CPython (a stray
//!    `\r`, control characters, a BOM, very deep nesting, 3.12 f-strings with nested code that
//!    the 3.11 rules would split differently) it gives up for that row: `D(i) = ∞`, which only
//!    costs speed, never correctness.
//! 4. Checks per candidate `j`: the statements before the last top-level start `c <= j` are
//!    known to parse (they are complete and before `D(i)`), so the span parses only if lines
//!    `c..=j` parse on their own (same decomposition); that check is cached across rows. A
//!    candidate that passes it is then confirmed with a full parse of `i..=j`, so the answer
//!    never rests on the decomposition alone.
//!
//! The unit tests compare this with [`code_extract_naive`] (the original's cubic loop over
//! the same syntax check) on thousands of generated texts.

use std::collections::HashMap;

use crate::pystr::py_strip;
use crate::syntax::{syntax_check_for, PythonVersion};

/// The original's cubic search, kept as the reference for tests and benchmarks.
pub fn code_extract_naive(text: &str, version: PythonVersion) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut best = (0usize, 0usize);
    let mut best_w = 0usize;
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            let span = lines[i..=j].join("\n");
            if syntax_check_for(&span, version) {
                let w = lines[i..=j]
                    .iter()
                    .filter(|l| !py_strip(l).is_empty())
                    .count();
                if w > best_w {
                    best_w = w;
                    best = (i, j);
                }
            }
        }
    }
    lines[best.0..=best.1].join("\n")
}

/// The original's `code_extract` (Python 3.11 grammar).
pub fn code_extract(text: &str) -> String {
    code_extract_for(text, PythonVersion::default())
}

pub fn code_extract_for(text: &str, version: PythonVersion) -> String {
    let (i, j) = Extractor::new(text, version).best_span();
    let lines = Lines::new(text);
    lines.span(i, j).to_string()
}

/// Line table over the original text: `split("\n")` without copying.
struct Lines<'a> {
    src: &'a str,
    starts: Vec<usize>,
    ends: Vec<usize>,
    /// `cum[k]` = non-blank lines among `0..k`.
    cum: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(src: &'a str) -> Self {
        let mut starts = vec![0];
        let mut ends = Vec::new();
        for (p, _) in src.match_indices('\n') {
            ends.push(p);
            starts.push(p + 1);
        }
        ends.push(src.len());
        let mut cum = Vec::with_capacity(starts.len() + 1);
        cum.push(0);
        for k in 0..starts.len() {
            let nb = !py_strip(&src[starts[k]..ends[k]]).is_empty();
            cum.push(cum[k] + nb as usize);
        }
        Lines {
            src,
            starts,
            ends,
            cum,
        }
    }
    fn len(&self) -> usize {
        self.starts.len()
    }
    fn line(&self, k: usize) -> &'a str {
        &self.src[self.starts[k]..self.ends[k]]
    }
    fn span(&self, i: usize, j: usize) -> &'a str {
        &self.src[self.starts[i]..self.ends[j]]
    }
    fn weight(&self, i: usize, j: usize) -> usize {
        self.cum[j + 1] - self.cum[i]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Complete statement that parses on its own.
    Ok,
    /// Complete statement that does not parse on its own.
    Fail,
    /// Every span reaching this line fails.
    Death(usize),
    /// The scanner cannot follow CPython here; no claim.
    Uncertain,
    /// The statement runs to the end of the text.
    Open,
}

#[derive(Clone, Copy, Debug)]
struct Stmt {
    /// First significant line (not blank, not comment-only) at or after the start; `n` if none.
    first: usize,
    /// Start of the next top-level statement (only for `Ok`/`Fail`).
    next: usize,
    status: Status,
}

struct Extractor<'a> {
    lines: Lines<'a>,
    version: PythonVersion,
    stmts: Vec<Option<Stmt>>,
    death: Vec<Option<usize>>,
    tails: HashMap<(usize, usize), bool>,
}

impl<'a> Extractor<'a> {
    fn new(text: &'a str, version: PythonVersion) -> Self {
        let lines = Lines::new(text);
        let n = lines.len();
        Extractor {
            lines,
            version,
            stmts: vec![None; n],
            death: vec![None; n],
            tails: HashMap::new(),
        }
    }

    fn best_span(&mut self) -> (usize, usize) {
        let n = self.lines.len();
        let mut best = (0, 0);
        let mut best_w = 0;
        for i in 0..n.saturating_sub(1) {
            if self.lines.weight(i, n - 1) <= best_w {
                break;
            }
            let d = self.death_line(i);
            if d <= i + 1 {
                continue;
            }
            let mut j = (d - 1).min(n - 1);
            'row: while j > i && self.lines.weight(i, j) > best_w {
                let v = self.lines.weight(i, j);
                // Smallest j' with the same weight: the last non-blank line <= j (or i+1).
                let mut a = j;
                while a > i + 1 && self.lines.weight(i, a - 1) == v {
                    a -= 1;
                }
                for jj in a..=j {
                    if self.span_parses(i, jj) {
                        best = (i, jj);
                        best_w = v;
                        break 'row;
                    }
                }
                j = a - 1;
            }
        }
        best
    }

    /// `D(i)`: every span `i..=j` with `j >= D(i)` fails. `n` (or more) means no claim.
    fn death_line(&mut self, i: usize) -> usize {
        let n = self.lines.len();
        // Follow the chain of complete statements; memoized per start line.
        let mut path = Vec::new();
        let mut s = i;
        let d = loop {
            if let Some(d) = self.death[s] {
                break d;
            }
            path.push(s);
            let st = self.stmt(s);
            match st.status {
                Status::Ok => s = st.next,
                Status::Fail => break st.next,
                Status::Death(l) => break l,
                Status::Uncertain | Status::Open => break n,
            }
        };
        for p in path {
            self.death[p] = Some(d);
        }
        d
    }

    fn span_parses(&mut self, i: usize, j: usize) -> bool {
        // Tail check: the last top-level start c <= j; lines c..=j must parse on their own.
        let mut s = i;
        let tail_start = loop {
            let st = self.stmt(s);
            if st.first > j {
                break None; // only blank/comment lines in the tail
            }
            match st.status {
                Status::Ok | Status::Fail if st.next <= j => s = st.next,
                Status::Uncertain => break None,
                _ => break Some(st.first),
            }
        };
        if let Some(c) = tail_start {
            if c > i {
                let key = (c, j);
                let ok = match self.tails.get(&key) {
                    Some(&ok) => ok,
                    None => {
                        let ok = syntax_check_for(self.lines.span(c, j), self.version);
                        self.tails.insert(key, ok);
                        ok
                    }
                };
                if !ok {
                    return false;
                }
            }
        }
        syntax_check_for(self.lines.span(i, j), self.version)
    }

    fn stmt(&mut self, s: usize) -> Stmt {
        if let Some(st) = self.stmts[s] {
            return st;
        }
        let st = scan_statement(&self.lines, s, self.version);
        let st = match st.status {
            Status::Ok => {
                // Scanned as complete; now ask the parser about it on its own.
                let ok = syntax_check_for(self.lines.span(st.first, st.next - 1), self.version);
                Stmt {
                    status: if ok { Status::Ok } else { Status::Fail },
                    ..st
                }
            }
            _ => st,
        };
        self.stmts[s] = Some(st);
        st
    }
}

/// Characters CPython's tokenizer rejects outside strings and comments whatever follows
/// (checked: each is neither an identifier character nor NFKC-equivalent to one).
fn is_fatal_char(c: char) -> bool {
    matches!(c, '$' | '?' | '`')
        || matches!(c as u32,
            0x2010..=0x2027      // dashes, quotes ‘’“”, bullets, ellipsis
            | 0x2030..=0x205E    // per mille, primes, ‹›, ※ ...
            | 0x2190..=0x23FF    // arrows, math operators, technical symbols
            | 0x2500..=0x27BF    // box drawing, shapes, dingbats (✓ ✗ ❌ ✅ ...)
            | 0x2B00..=0x2BFF    // arrows and symbols
            | 0x3001..=0x3003    // 、。〃
            | 0x3008..=0x3011    // 〈〉《》「」『』【】
            | 0xFF01..=0xFF0F    // fullwidth ! " # ... /
            | 0xFF1A..=0xFF20    // fullwidth : ; < = > ? @
            | 0x1F300..=0x1FAFF  // emoji
        )
}

/// Column of the first token of a line as CPython measures it: only whether it is 0 matters,
/// and a form feed resets the column.
fn indent_is_zero(line: &str) -> bool {
    let mut col0 = true;
    for b in line.bytes() {
        match b {
            b' ' | b'\t' => col0 = false,
            b'\x0c' => col0 = true,
            _ => break,
        }
    }
    col0
}

fn strip_cr(line: &str) -> &str {
    line.strip_suffix('\r').unwrap_or(line)
}

/// Blank or comment-only at the start of a logical line (no tokens for the parser).
fn is_blank_or_comment(line: &str) -> bool {
    let t = strip_cr(line).trim_start_matches([' ', '\t', '\x0c']);
    t.is_empty() || t.starts_with('#')
}

fn starts_with_keyword(line: &str, kws: &[&str]) -> bool {
    let t = line.trim_start_matches('\x0c');
    kws.iter().any(|kw| {
        t.strip_prefix(kw).is_some_and(|rest| {
            !rest
                .chars()
                .next()
                .is_some_and(|c| c == '_' || c.is_alphanumeric())
        })
    })
}

#[derive(Clone, Copy)]
struct StrState {
    quote: u8,
    triple: bool,
    /// An f-string under PEP 701 rules (3.12+): we only follow those that the 3.11 rules
    /// delimit identically.
    fstring: bool,
    fdepth: u32,
    open_line: usize,
}

/// Scans the first top-level statement of a span starting at line `s` with a fresh tokenizer.
fn scan_statement(lines: &Lines, s: usize, version: PythonVersion) -> Stmt {
    let n = lines.len();
    let mut first = s;
    while first < n && is_blank_or_comment(lines.line(first)) {
        if has_stray_cr(lines.line(first)) {
            return uncertain(first);
        }
        first += 1;
    }
    if first == n {
        return Stmt {
            first,
            next: n,
            status: Status::Open,
        };
    }
    if !indent_is_zero(lines.line(first)) {
        return Stmt {
            first,
            next: n,
            status: Status::Death(first), // unexpected indent
        };
    }
    let mut brackets: Vec<u8> = Vec::new();
    let mut string: Option<StrState> = None;
    let mut continuation = false;
    let mut after_decorator = false;
    for l in first..n {
        let raw = lines.line(l);
        if has_stray_cr(raw) {
            return uncertain(first);
        }
        let line = strip_cr(raw);
        let logical_start = brackets.is_empty() && string.is_none() && !continuation;
        if logical_start {
            if is_blank_or_comment(line) {
                continue;
            }
            if indent_is_zero(line) {
                if l > first
                    && !after_decorator
                    && !starts_with_keyword(line, &["else", "elif", "except", "finally"])
                {
                    return Stmt {
                        first,
                        next: l,
                        status: Status::Ok, // to be checked by the parser
                    };
                }
                after_decorator = line.trim_start_matches('\x0c').starts_with('@');
            }
            if line
                .trim_start_matches([' ', '\t', '\x0c'])
                .starts_with('\\')
            {
                return uncertain(first);
            }
        }
        continuation = false;
        let b = line.as_bytes();
        let mut k = 0;
        while k < b.len() {
            if let Some(mut st) = string {
                let c = b[k];
                if c == b'\\' {
                    if st.fstring && st.fdepth > 0 {
                        return uncertain(first);
                    }
                    k += 2; // skips the escaped char; past the end means "continues"
                    continue;
                }
                if st.fstring {
                    match c {
                        b'{' if st.fdepth == 0 && b.get(k + 1) == Some(&b'{') => {
                            k += 2;
                            continue;
                        }
                        b'{' => st.fdepth += 1,
                        b'}' if st.fdepth > 0 => st.fdepth -= 1,
                        b'#' if st.fdepth > 0 => return uncertain(first),
                        _ => {}
                    }
                }
                if c == st.quote {
                    if !st.triple {
                        if st.fdepth > 0 {
                            return uncertain(first);
                        }
                        string = None;
                        k += 1;
                        continue;
                    }
                    if b.get(k + 1) == Some(&st.quote) && b.get(k + 2) == Some(&st.quote) {
                        if st.fdepth > 0 {
                            return uncertain(first);
                        }
                        string = None;
                        k += 3;
                        continue;
                    }
                }
                string = Some(st);
                k += 1;
                continue;
            }
            let c = b[k];
            match c {
                b'#' => break,
                b'\'' | b'"' => {
                    let triple = b.get(k + 1) == Some(&c) && b.get(k + 2) == Some(&c);
                    let fstring = version.has_pep701() && prefix_has_f(&b[..k]);
                    string = Some(StrState {
                        quote: c,
                        triple,
                        fstring,
                        fdepth: 0,
                        open_line: l,
                    });
                    k += if triple { 3 } else { 1 };
                    continue;
                }
                b'(' | b'[' | b'{' => {
                    brackets.push(c);
                    if brackets.len() >= 150 {
                        return uncertain(first); // CPython's nesting limit is near
                    }
                }
                b')' | b']' | b'}' => {
                    let want = match c {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if brackets.pop() != Some(want) {
                        return death(first, l); // unmatched / mismatched bracket
                    }
                }
                b'\\' => {
                    if k + 1 == b.len() {
                        continuation = true;
                    } else {
                        return death(first, l); // unexpected character after continuation
                    }
                }
                b'!' if b.get(k + 1) != Some(&b'=') => return death(first, l),
                b'\t' | b'\x0c' | b' ' => {}
                0..=0x1f | 0x7f => return uncertain(first),
                0x80.. => {
                    let ch = line[k..].chars().next().unwrap_or('\u{fffd}');
                    if ch == '\u{feff}' {
                        return uncertain(first);
                    }
                    if is_fatal_char(ch) {
                        return death(first, l);
                    }
                    k += ch.len_utf8();
                    continue;
                }
                _ if is_fatal_char(c as char) => return death(first, l),
                _ => {}
            }
            k += 1;
        }
        if let Some(st) = string {
            // A single-quoted string must end on its line unless an odd run of backslashes
            // escapes the newline (an even run is escaped backslashes).
            if !st.triple && trailing_backslashes(line).is_multiple_of(2) {
                if st.fdepth > 0 {
                    return uncertain(first);
                }
                return death(first, l); // unterminated single-quoted string
            }
        }
    }
    if let Some(st) = string {
        if st.triple {
            if st.fdepth > 0 {
                return uncertain(first);
            }
            // Never closed before the end of the text: every span through its opening fails.
            return death(first, st.open_line);
        }
    }
    Stmt {
        first,
        next: n,
        status: Status::Open,
    }
}

fn trailing_backslashes(line: &str) -> usize {
    line.bytes().rev().take_while(|&b| b == b'\\').count()
}

fn has_stray_cr(line: &str) -> bool {
    strip_cr(line).contains('\r')
}

fn uncertain(first: usize) -> Stmt {
    Stmt {
        first,
        next: usize::MAX,
        status: Status::Uncertain,
    }
}

fn death(first: usize, line: usize) -> Stmt {
    Stmt {
        first,
        next: usize::MAX,
        status: Status::Death(line),
    }
}

/// Is the identifier run right before a quote a string prefix containing `f`?
fn prefix_has_f(before: &[u8]) -> bool {
    let start = before
        .iter()
        .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .map_or(0, |p| p + 1);
    let p = before[start..].to_ascii_lowercase();
    matches!(&p[..], b"f" | b"rf" | b"fr")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_line_text_is_returned_whole() {
        assert_eq!(code_extract("x = 1"), "x = 1");
        assert_eq!(code_extract(""), "");
    }

    #[test]
    fn nothing_parses_gives_first_line() {
        let t = "Hello there’s nothing\nHere's none either\n`x`";
        assert_eq!(code_extract(t), "Hello there’s nothing");
        assert_eq!(
            code_extract_naive(t, PythonVersion::Py311),
            "Hello there’s nothing"
        );
    }
}
