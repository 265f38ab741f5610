//! Untrusted text, in one place: which characters a guest-supplied string
//! may carry into a model's context or a person's terminal, and how such a
//! string is shown on a terminal.
//!
//! Anything a guest supplies (tool names, descriptions, schemas, log lines,
//! progress, approval requests, error messages, output) is data. Two rules:
//!
//! - **At load** ([`check`]), a spec or policy text that contains a control
//!   character other than `\n` and `\t` is refused, naming the field and the
//!   code point: C0 controls (U+0000–U+001F), DEL (U+007F), C1 controls
//!   (U+0080–U+009F), and the Unicode bidirectional overrides and isolates
//!   (U+202A–U+202E, U+2066–U+2069), which can reorder what a reviewer reads.
//! - **At display** ([`escape`]), every guest string printed to a terminal or
//!   shown to a reviewer has those characters replaced by a visible escape
//!   such as `\u{1b}`, so no guest can move the cursor, clear the screen, ring
//!   the bell, recolor the host's text or reorder it. JSON output gets the
//!   same characters as JSON escapes ([`escape_json`]), so it stays valid.
//!   Text that lands inside one line (an error, a refusal, a log field, a
//!   file name) gets its newlines and tabs escaped too ([`escape_line`]), so
//!   it cannot start a line that reads as the host's own.

use std::borrow::Cow;

/// Whether `c` may not appear in guest text shown to a model or a person:
/// a C0 control other than `\n` and `\t`, DEL, a C1 control, or a bidi
/// override or isolate.
pub fn is_forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A short name of a forbidden character for messages, e.g. `ESC`.
fn name_of(c: char) -> &'static str {
    match c {
        '\u{7}' => "BEL",
        '\u{8}' => "BS",
        '\u{d}' => "CR",
        '\u{1b}' => "ESC",
        '\u{7f}' => "DEL",
        '\u{9b}' => "CSI",
        '\u{202a}'..='\u{202e}' => "a bidi override",
        '\u{2066}'..='\u{2069}' => "a bidi isolate",
        '\u{80}'..='\u{9f}' => "a C1 control",
        _ => "a control character",
    }
}

/// Checks that `value`, the text of `field`, has no forbidden character.
///
/// # Errors
/// A message naming the field, the code point and its position (in
/// characters), e.g. "the description contains U+001B (ESC) at character 12;
/// remove control characters (only newlines and tabs are allowed)".
pub fn check(field: &str, value: &str) -> Result<(), String> {
    match value.chars().enumerate().find(|(_, c)| is_forbidden(*c)) {
        None => Ok(()),
        Some((at, c)) => Err(format!(
            "{field} contains U+{:04X} ({}) at character {at}; remove control characters \
             (only newlines and tabs are allowed): they can rewrite what a terminal or a \
             reviewer shows",
            c as u32,
            name_of(c)
        )),
    }
}

/// `text` with every forbidden character replaced by a visible Rust-style
/// escape (`\u{1b}`); borrowed when there is none.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, is_forbidden, |c, out| {
        out.push_str(&format!("\\u{{{:x}}}", c as u32));
    })
}

/// `text` for one line of a message (an error, a refusal, a log line):
/// [`escape`], and newlines and tabs written as `\n` and `\t` too, so text
/// from outside cannot start a line that looks like the host's own;
/// borrowed when there is nothing to escape.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    let breaks_the_line = |c| is_forbidden(c) || c == '\n' || c == '\t';
    escape_with(text, breaks_the_line, |c, out| match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    })
}

/// JSON text (as serde_json writes it) with every forbidden character that
/// serde_json leaves raw (DEL, C1 controls, bidi controls) written as a JSON
/// `\uXXXX` escape. Those characters can only occur inside JSON strings, so
/// the result is equivalent, valid JSON.
pub fn escape_json(json: &str) -> Cow<'_, str> {
    escape_with(json, is_forbidden, |c, out| {
        out.push_str(&format!("\\u{:04x}", c as u32));
    })
}

/// `text` with each character `escaped` says so written by `write`;
/// borrowed when there is none.
fn escape_with(
    text: &str,
    escaped: impl Fn(char) -> bool,
    write: impl Fn(char, &mut String),
) -> Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` cut to at most `max_bytes` bytes on a character boundary, with `…`
/// appended when something was cut.
pub fn truncate(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_keeps_to_one_line() {
        assert!(matches!(escape_line("plain `text`"), Cow::Borrowed(_)));
        assert_eq!(
            escape_line("field `a\nERROR: forged`\t\u{1b}[2J"),
            "field `a\\nERROR: forged`\\t\\u{1b}[2J"
        );
        assert!(
            !escape_line("\r\n\t\u{9b}\u{202e}")
                .chars()
                .any(char::is_control)
        );
    }

    #[test]
    fn forbidden_characters_are_exactly_the_dangerous_ones() {
        for c in [
            '\u{0}', '\u{7}', '\u{1b}', '\r', '\u{7f}', '\u{85}', '\u{9b}', '\u{202e}', '\u{2066}',
        ] {
            assert!(is_forbidden(c), "{c:?}");
        }
        for c in ['\n', '\t', 'a', 'é', '€', '\u{200d}', 'ж'] {
            assert!(!is_forbidden(c), "{c:?}");
        }
    }

    #[test]
    fn check_names_the_field_and_the_code_point() {
        assert!(check("the description", "fine\n\twith tabs").is_ok());
        let err = check("the description", "abc\u{1b}[2J").unwrap_err();
        assert!(
            err.starts_with("the description contains U+001B (ESC) at character 3"),
            "{err}"
        );
        let err = check("a note", "x\u{202e}y").unwrap_err();
        assert!(err.contains("U+202E (a bidi override)"), "{err}");
    }

    #[test]
    fn escapes_are_visible_and_json_stays_json() {
        let spoof = "\u{1b}[2K\r\u{1b}[1ARead-only: list notes (safe)";
        let shown = escape(spoof);
        assert_eq!(
            shown,
            "\\u{1b}[2K\\u{d}\\u{1b}[1ARead-only: list notes (safe)"
        );
        assert!(!shown.chars().any(is_forbidden));
        assert!(matches!(escape("plain\n"), Cow::Borrowed(_)));

        let json = serde_json::json!({"s": "a\u{202e}b\u{7f}\u{1b}"}).to_string();
        let safe = escape_json(&json);
        assert!(!safe.chars().any(is_forbidden), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back["s"], "a\u{202e}b\u{7f}\u{1b}");
    }
}
