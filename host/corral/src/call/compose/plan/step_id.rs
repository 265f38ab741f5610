//! The step-id rule, in one place: a step id is 1 to [`MAX_LEN`] characters
//! from `[A-Za-z0-9_-]`. The plan parser checks ids with [`is_valid`], `$ref`
//! parsing reads ids with [`is_char`], and the plan tool's JSON Schema
//! carries [`pattern`].

/// Longest step id, in characters.
pub const MAX_LEN: usize = 64;

/// The rule in words, for error messages.
pub(crate) const RULE: &str = "ids use 1 to 64 characters from [A-Za-z0-9_-]";

/// Whether `c` may appear in a step id.
pub(crate) fn is_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether `id` is a valid step id.
pub(crate) fn is_valid(id: &str) -> bool {
    (1..=MAX_LEN).contains(&id.len()) && id.chars().all(is_char)
}

/// The rule as a JSON Schema `pattern`.
pub(crate) fn pattern() -> String {
    format!("^[A-Za-z0-9_-]{{1,{MAX_LEN}}}$")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_the_checker_and_the_pattern_agree() {
        assert!(RULE.contains(&MAX_LEN.to_string()));
        assert_eq!(pattern(), "^[A-Za-z0-9_-]{1,64}$");
        let pattern = regex::Regex::new(&pattern()).expect("regex");
        for id in [
            "a",
            "step_1",
            "x-y",
            &"a".repeat(64),
            "",
            "a b",
            "é",
            &"a".repeat(65),
            "a.b",
        ] {
            assert_eq!(is_valid(id), pattern.is_match(id), "{id:?}");
        }
    }
}
