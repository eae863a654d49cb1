//! The one reading of a model's answer: given the task (its `complete_prompt` and entry
//! point) and the text a client sent, the program that is scored. `bcb sanitize` reads a
//! samples file's rows with it and every endpoint of `bcb serve` that takes model text reads
//! its answers with it, so an answer scores the same whichever way it arrives. The rule is
//! documented in `docs/rl-rewards.md`.

use crate::{sanitize_with, slice, Options};

/// A client's text and what it says about how the text relates to the task's prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerText<'a> {
    /// A whole answer (a samples file's `solution`): a chat answer, a bare program, the prompt
    /// followed by its continuation.
    Solution(&'a str),
    /// A continuation of the task's `complete_prompt` (a samples file's `completion`).
    Completion(&'a str),
    /// Either one; [`read_answer`] decides (see [`ReadAs`]).
    Raw(&'a str),
}

/// How an answer was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAs {
    /// The answer's own code defines the entry point: sanitized alone, as a samples file's
    /// `solution`.
    Solution,
    /// The answer continues the prompt: `complete_prompt + "\n" + answer` sanitized, as
    /// `bcb sanitize` reads a samples file's `completion`.
    Completion,
}

/// The program an answer is scored by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The sanitized program (what `bcb sanitize` writes as the row's `solution`).
    pub code: String,
    /// The text that was sanitized: the answer, or the prompt joined to the continuation.
    pub source: String,
    pub read_as: ReadAs,
}

/// Reads an answer for the task whose prompt is `complete_prompt` and whose entry point is
/// `entry_point`. `<think>` blocks are dropped first when `opts.strip_think` is set.
///
/// A [`AnswerText::Raw`] answer is a whole solution when its sanitized code defines the
/// entry point at top level, else a continuation of the prompt (the prompt's own `def`
/// makes that reading define it, so text with no code scores as the prompt's empty body).
pub fn read_answer(
    text: AnswerText<'_>,
    complete_prompt: &str,
    entry_point: &str,
    opts: &Options,
) -> Reading {
    let entry = Some(entry_point);
    let solution = |t: &str| Reading {
        code: sanitize_with(t, entry, opts),
        source: t.to_string(),
        read_as: ReadAs::Solution,
    };
    let completion = |t: &str| {
        let source = format!("{complete_prompt}\n{t}");
        Reading {
            code: sanitize_with(&source, entry, opts),
            source,
            read_as: ReadAs::Completion,
        }
    };
    match text {
        AnswerText::Solution(t) => solution(t),
        AnswerText::Completion(t) => completion(t),
        AnswerText::Raw(t) => {
            // The continuation is tried on the answer without its reasoning: a `<think>`
            // block joined to the prompt would otherwise be read as code.
            let stripped;
            let t = if opts.strip_think {
                stripped = crate::strip_think(t);
                stripped.as_str()
            } else {
                t
            };
            let whole = solution(t);
            if slice::defines_function(&whole.code, entry_point) {
                whole
            } else {
                completion(t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str = "import math\ndef task_func(x):\n    \"\"\"Root of x.\"\"\"\n";

    fn read(text: AnswerText<'_>) -> Reading {
        let opts = Options {
            strip_think: true,
            ..Options::default()
        };
        read_answer(text, PROMPT, "task_func", &opts)
    }

    #[test]
    fn every_shape_of_one_answer_reads_to_a_program_defining_the_entry_point() {
        let body = "    return math.sqrt(x)\n";
        let full = format!("{PROMPT}{body}");
        let shapes = [
            AnswerText::Raw(body),
            AnswerText::Raw(&full),
            AnswerText::Completion(body),
            AnswerText::Solution(&full),
        ];
        let chat = format!("Sure:\n```python\n{full}```\nDone.");
        let think =
            format!("<think>maybe ```python\ndef task_func(x): return 0\n```</think>{chat}");
        for text in shapes
            .into_iter()
            .chain([AnswerText::Raw(&chat), AnswerText::Raw(&think)])
        {
            let r = read(text);
            assert!(r.code.contains("def task_func(x):"), "{text:?}: {r:?}");
            assert!(r.code.contains("math.sqrt(x)"), "{text:?}: {r:?}");
            assert!(!r.code.contains("return 0"), "{text:?}: {r:?}");
        }
        assert_eq!(read(AnswerText::Raw(body)).read_as, ReadAs::Completion);
        assert_eq!(read(AnswerText::Raw(&chat)).read_as, ReadAs::Solution);
    }

    #[test]
    fn text_without_code_is_read_as_the_prompts_empty_body() {
        let r = read(AnswerText::Raw("I cannot answer that."));
        assert_eq!(r.read_as, ReadAs::Completion);
        assert!(
            r.code.starts_with("import math\ndef task_func(x):"),
            "{r:?}"
        );
    }

    #[test]
    fn only_a_top_level_def_counts() {
        assert!(slice::defines_function("def f():\n    pass", "f"));
        assert!(slice::defines_function("@d\ndef f():\n    pass", "f"));
        assert!(!slice::defines_function(
            "class A:\n    def f(self): pass",
            "f"
        ));
        assert!(!slice::defines_function("f = 1", "f"));
        assert!(!slice::defines_function("def fg(): pass", "f"));
    }
}
