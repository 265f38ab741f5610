//! Tool names: the rule (re-exported from the `corral-names` crate, its one
//! source, which the guest SDK's `#[tool]` macro shares) and the "did you
//! mean" suggestion for a name that matches none.
//!
//! The rule: a name is non-blank, only `[A-Za-z0-9_]`, at most
//! [`MAX_NAME_LEN`] characters, and not one of [`RESERVED_NAMES`]. It applies
//! to names a plugin declares, to the names a policy's `rename` produces, and
//! to pipelines.

pub use corral_names::{
    CODE_TOOL, MAX_NAME_LEN, PLAN_TOOL, RESERVED_NAMES, SEARCH_TOOL, check_name,
};

/// The name among `known` closest to `name` (case-insensitive edit distance
/// of at most 2, or a third of the candidate's length), for "did you mean"
/// hints.
pub(crate) fn suggest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<String> {
    let wanted = name.to_ascii_lowercase();
    known
        .map(|k| (edit_distance(&wanted, &k.to_ascii_lowercase()), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k.to_string())
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        assert!(check_name("word_count").is_ok());
        assert!(check_name("A9_").is_ok());
        assert!(check_name("").unwrap_err().contains("blank"));
        assert!(check_name("   ").unwrap_err().contains("blank"));
        assert!(check_name("has-dash").unwrap_err().contains("'-'"));
        assert!(check_name("spa ce").unwrap_err().contains("' '"));
        assert!(check_name("é").is_err());
        // A homoglyph (Cyrillic `о` in place of Latin `o`) is not a letter
        // of the rule, so no plugin can shadow `word_count` by lookalike.
        let homoglyph = check_name("w\u{43e}rd_count").unwrap_err();
        assert!(homoglyph.contains("'о'"), "{homoglyph}");
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).unwrap_err().contains("65"));
        assert!(check_name(PLAN_TOOL).unwrap_err().contains("reserved"));
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
        let known = ["word_count", "slugify"];
        assert_eq!(
            suggest("word_cont", known.iter().copied()).as_deref(),
            Some("word_count")
        );
        assert_eq!(suggest("zzzzzz", known.iter().copied()), None);
    }
}
