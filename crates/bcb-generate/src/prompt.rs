//! Prompts and stop lists, built by the same rules as the original harness
//! (`provider/utility.py` of bigcodebench 0.2.5).

use bcb_dataset::Split;

pub const DEFAULT_INSTRUCTION_PREFIX: &str = "Please provide a self-contained Python script that solves the following problem in a markdown code block:";
pub const DEFAULT_RESPONSE_PREFIX: &str = "Below is a Python script with a self-contained function that solves the problem and passes corresponding tests:";

/// Stop words the original passes to every local model (and to Anthropic as `stop_sequences`).
pub const EOS: [&str; 6] = [
    "<|endoftext|>",
    "<|endofmask|>",
    "</s>",
    "\nif __name__",
    "\ndef main(",
    "\nprint(",
];

/// Added to [`EOS`] for direct completion of base models.
pub const EXTRA_EOS_DIRECT_COMPLETION: [&str; 5] =
    ["\ndef ", "\nclass ", "\nimport ", "\nfrom ", "\nassert "];

/// Added to the stops when the answer is prefilled up to an open python fence.
pub const PREFILL_STOP: &str = "\n```\n";

/// The user message of the chat prompt: complete split wraps the prompt in a bare fence.
pub fn chat_user_message(task_prompt: &str, split: Split, instruction_prefix: &str) -> String {
    let body = task_prompt.trim();
    match split {
        Split::Complete => format!("{instruction_prefix}\n```\n{body}\n```\n"),
        Split::Instruct => format!("{instruction_prefix}\n{body}\n"),
    }
}

/// The assistant prefill: the original's response template cut at its magic splitter, so the
/// model continues inside an open python fence.
pub fn prefill_text(response_prefix: &str) -> String {
    format!("{response_prefix}\n```python\n")
}

/// The task prompt as the original reads it, with `--strip-newlines` applied.
pub fn task_prompt(prompt: &str, strip_newlines: bool) -> &str {
    if strip_newlines {
        prompt.trim_matches('\n')
    } else {
        prompt
    }
}

/// Stops for direct completion: [`EOS`] plus the extra words.
pub fn direct_completion_stops() -> Vec<String> {
    EOS.iter()
        .chain(EXTRA_EOS_DIRECT_COMPLETION.iter())
        .map(|s| s.to_string())
        .collect()
}

/// `<think>` blocks are removed by the sanitizer's rule, so generate and sanitize agree.
pub use bcb_sanitize::strip_think;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_instruct_shapes() {
        assert_eq!(
            chat_user_message("\n\ndef f():\n  pass\n\n", Split::Complete, "P:"),
            "P:\n```\ndef f():\n  pass\n```\n"
        );
        assert_eq!(
            chat_user_message("  Do x.\n", Split::Instruct, "P:"),
            "P:\nDo x.\n"
        );
        assert_eq!(prefill_text("R:"), "R:\n```python\n");
        assert_eq!(task_prompt("\n\nx\n\n", true), "x");
        assert_eq!(task_prompt("\n\nx\n\n", false), "\n\nx\n\n");
        assert_eq!(direct_completion_stops().len(), 11);
    }

    #[test]
    fn think_blocks_are_removed() {
        assert_eq!(strip_think("<think>a</think>b<think>c</think>d"), "bd");
        assert_eq!(strip_think("reasoning</think>\ncode"), "\ncode");
        assert_eq!(strip_think("x<think>never closed"), "x");
        assert_eq!(strip_think("plain"), "plain");
    }
}
