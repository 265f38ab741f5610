//! The identifier rules, one family. Every identifier corral checks is
//! built from the tool-name characters (ASCII letters, digits and `_`,
//! [`crate::NAME_CHARS`]), so that it is also an identifier in every SDK
//! language and safe in a terminal, a log line and a URL. A kind may allow
//! one more character (a step id takes `-`), narrow the first character
//! (an environment variable does not start with a digit) or the case (a
//! `corral new` project is lowercase, as a Python module and a crate are);
//! each has its own length and its own words in messages.
//!
//! | kind | [`Rule`] | characters | first | length |
//! |---|---|---|---|---|
//! | tool name ([`crate::check_name`]) | [`TOOL`] | `[A-Za-z0-9_]` | any | 1–64 |
//! | secret name | [`SECRET`] | `[A-Za-z0-9_]` | any | 1–64 |
//! | `[presentation]` prefix | [`PREFIX`] | `[A-Za-z0-9_]` | any | 1–64 |
//! | plan step id (and `$ref:ID`) | [`STEP_ID`] | `[A-Za-z0-9_-]` | any | 1–64 |
//! | `$ref` field name | [`FIELD`] | `[A-Za-z0-9_]` | any | 1–256 |
//! | environment variable | [`ENV_VAR`] | `[A-Za-z0-9_]` | not a digit | 1–256 |
//! | `corral new` project | [`PROJECT`] | `[a-z0-9_]` | a letter | 1–48 |

use std::borrow::Cow;

/// Which first characters a [`Rule`] allows, beyond its other characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// Any character of the rule.
    Any,
    /// Any character of the rule but a digit (POSIX environment names).
    NotDigit,
    /// A letter.
    Letter,
}

/// One kind of identifier: its characters, first character, length and
/// how messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// What the identifier is, for messages: "a secret name".
    pub what: &'static str,
    /// Longest allowed, in characters (all ASCII, so also in bytes).
    pub max_len: usize,
    /// Characters allowed besides ASCII letters, digits and `_`.
    pub extra: Option<char>,
    /// Which characters may come first.
    pub first: First,
    /// Only lowercase letters.
    pub lowercase: bool,
}

/// A tool name (the rule's characters and length; [`crate::check_name`]
/// adds the reserved names and its own messages).
pub const TOOL: Rule = Rule {
    what: "a tool name",
    max_len: crate::MAX_NAME_LEN,
    extra: None,
    first: First::Any,
    lowercase: false,
};

/// A secret's name in a store and in `{secret:NAME}`.
pub const SECRET: Rule = Rule {
    what: "a secret name",
    max_len: 64,
    ..TOOL
};

/// A policy's `[presentation]` `prefix` (prepended to each tool name).
pub const PREFIX: Rule = Rule {
    what: "a tool-name prefix",
    max_len: crate::MAX_NAME_LEN,
    ..TOOL
};

/// A step id of a plan or pipeline, and the id part of `$ref:ID`.
pub const STEP_ID: Rule = Rule {
    what: "a step id",
    max_len: 64,
    extra: Some('-'),
    ..TOOL
};

/// A field name in a `$ref:ID.field` path.
pub const FIELD: Rule = Rule {
    what: "a field name",
    max_len: 256,
    ..TOOL
};

/// An environment variable a policy passes (`[env]`).
pub const ENV_VAR: Rule = Rule {
    what: "an environment variable name",
    max_len: 256,
    first: First::NotDigit,
    ..TOOL
};

/// The name `corral new` gives a project, its component and its tool.
pub const PROJECT: Rule = Rule {
    what: "a tool project name",
    max_len: 48,
    first: First::Letter,
    lowercase: true,
    ..TOOL
};

impl Rule {
    /// Whether `c` may appear in the identifier (anywhere but, by
    /// [`Rule::first`], perhaps first).
    pub fn allows_char(&self, c: char) -> bool {
        let letter = if self.lowercase {
            c.is_ascii_lowercase()
        } else {
            c.is_ascii_alphabetic()
        };
        letter || c.is_ascii_digit() || c == '_' || Some(c) == self.extra
    }

    fn allows_first(&self, c: char) -> bool {
        self.allows_char(c)
            && match self.first {
                First::Any => true,
                First::NotDigit => !c.is_ascii_digit(),
                First::Letter => c.is_ascii_alphabetic(),
            }
    }

    /// Whether `value` follows the rule.
    pub fn is_valid(&self, value: &str) -> bool {
        self.problem(value).is_none()
    }

    /// The rule in words: "1 to 64 letters, digits and `_`, not starting
    /// with a digit".
    pub fn words(&self) -> String {
        let letters = if self.lowercase {
            "lowercase letters"
        } else {
            "letters"
        };
        let chars = match self.extra {
            Some(extra) => format!("{letters}, digits, `_` and `{extra}`"),
            None => format!("{letters}, digits and `_`"),
        };
        let first = match self.first {
            First::Any => "",
            First::NotDigit => ", not starting with a digit",
            First::Letter => ", starting with a letter",
        };
        format!("1 to {} {chars}{first}", self.max_len)
    }

    /// The rule as a regular expression (a JSON Schema `pattern`),
    /// anchored.
    pub fn pattern(&self) -> String {
        let letters = if self.lowercase { "a-z" } else { "A-Za-z" };
        let extra = self.extra.map(String::from).unwrap_or_default();
        let class = format!("[{letters}0-9_{extra}]");
        match self.first {
            First::Any => format!("^{class}{{1,{}}}$", self.max_len),
            First::NotDigit => format!("^[{letters}_{extra}]{class}{{0,{}}}$", self.max_len - 1),
            First::Letter => format!("^[{letters}]{class}{{0,{}}}$", self.max_len - 1),
        }
    }

    /// What is wrong with `value`, in words that do not repeat it; `None`
    /// when it follows the rule.
    pub fn problem(&self, value: &str) -> Option<Cow<'static, str>> {
        let Some(first) = value.chars().next() else {
            return Some("it is empty".into());
        };
        if value.len() > self.max_len {
            return Some(format!("it is {} characters long", value.len()).into());
        }
        if let Some(bad) = value.chars().find(|c| !self.allows_char(*c)) {
            return Some(format!("it contains {bad:?}").into());
        }
        if !self.allows_first(first) {
            return Some(format!("it starts with {first:?}").into());
        }
        None
    }

    /// Checks `value`.
    ///
    /// # Errors
    /// "`VALUE` is not WHAT (PROBLEM): use WORDS", the value escaped for a
    /// terminal ([`crate::text::escape`]).
    pub fn check(&self, value: &str) -> Result<(), String> {
        match self.problem(value) {
            None => Ok(()),
            Some(problem) => Err(format!(
                "`{}` is not {} ({problem}): use {}",
                crate::text::escape(value),
                self.what,
                self.words()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Rule; 7] = [TOOL, SECRET, PREFIX, STEP_ID, FIELD, ENV_VAR, PROJECT];

    #[test]
    fn the_checker_and_the_pattern_agree_for_every_kind() {
        let samples = [
            "a", "A", "_x", "x_1", "1x", "x-y", "-", "a b", "é", "", "x.y", "aB", "ab",
        ];
        for rule in ALL {
            let pattern = regex::Regex::new(&rule.pattern()).expect("a regex");
            let long = "a".repeat(rule.max_len);
            let too_long = "a".repeat(rule.max_len + 1);
            for value in samples.iter().copied().chain([&long[..], &too_long[..]]) {
                assert_eq!(
                    rule.is_valid(value),
                    pattern.is_match(value),
                    "{} {value:?} against {}",
                    rule.what,
                    rule.pattern()
                );
            }
        }
    }

    #[test]
    fn messages_name_the_kind_the_problem_and_the_fix() {
        assert_eq!(
            SECRET.check("bad name").unwrap_err(),
            "`bad name` is not a secret name (it contains ' '): use 1 to 64 letters, digits and `_`"
        );
        assert!(
            ENV_VAR
                .check("1X")
                .unwrap_err()
                .contains("not starting with a digit")
        );
        assert!(
            PROJECT
                .check("Hello")
                .unwrap_err()
                .contains("lowercase letters, digits and `_`")
        );
        assert!(STEP_ID.check("").unwrap_err().contains("it is empty"));
        assert!(STEP_ID.words().contains("`_` and `-`"));
        // An escape sequence in the value reaches no terminal.
        assert!(!SECRET.check("\u{1b}[2J").unwrap_err().contains('\u{1b}'));
    }

    #[test]
    fn the_tool_rule_is_the_name_rule() {
        for name in ["word_count", "a-b", "", &"a".repeat(65), "é"] {
            assert_eq!(
                TOOL.is_valid(name),
                crate::check_name(name).is_ok(),
                "{name:?}"
            );
        }
    }
}
