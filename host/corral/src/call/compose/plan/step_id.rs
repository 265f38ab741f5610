//! The step-id rule ([`corral_names::ident::STEP_ID`]: 1 to 64 characters
//! from `[A-Za-z0-9_-]`), as plans use it: the plan parser
//! checks ids with [`is_valid`], `$ref` parsing reads ids with [`is_char`],
//! and the plan tool's JSON Schema carries [`pattern`].

use corral_names::ident::STEP_ID;

/// The rule in words, for error messages: "ids use 1 to 64 letters,
/// digits, `_` and `-`".
pub(crate) fn rule() -> String {
    format!("ids use {}", STEP_ID.words())
}

/// Whether `c` may appear in a step id.
pub(crate) fn is_char(c: char) -> bool {
    STEP_ID.allows_char(c)
}

/// Whether `id` is a valid step id.
pub(crate) fn is_valid(id: &str) -> bool {
    STEP_ID.is_valid(id)
}

/// The rule as a JSON Schema `pattern`.
pub(crate) fn pattern() -> String {
    STEP_ID.pattern()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_the_checker_and_the_pattern_agree() {
        assert!(rule().contains(&STEP_ID.max_len.to_string()));
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
