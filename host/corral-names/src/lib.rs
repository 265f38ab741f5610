//! corral's tool-name rule, the one source of it: the host's resolver checks
//! every name a plugin declares, a policy's `rename` produces or a pipeline
//! takes with [`check_name`], and the Rust guest SDK's `#[tool]` macro runs
//! the same function at compile time. The Python and JavaScript SDK helpers
//! (`guest-sdk/python`, `guest-sdk/js`) carry the rule in their own
//! language; a test of the host's integration suite checks their pattern,
//! length and reserved names against this crate.
//!
//! The rule (MCP's tool-name guidance, narrowed so a name is also a valid
//! identifier in every SDK language): a name is non-blank, only
//! [`NAME_CHARS`], at most [`MAX_NAME_LEN`] characters, and not one of
//! [`RESERVED_NAMES`].
//!
//! The other identifiers corral checks (secret names, step ids, prefixes,
//! environment variables, `corral new` projects) follow the same family of
//! rules, each kind with its own length and words ([`ident`]).
//!
//! It also holds the rules for untrusted text ([`text`]): which characters
//! guest-supplied text may carry, and how it is escaped for a terminal. They
//! live here, with no dependencies, so that every host crate (the sandbox,
//! the signature checks, the library) shares one copy, with the line diff
//! ([`diff`]) that shows how one text became another.

pub mod diff;
pub mod ident;
pub mod text;

/// Longest tool name accepted, in characters.
pub const MAX_NAME_LEN: usize = 64;

/// The characters a name may use, as a regular-expression class.
pub const NAME_CHARS: &str = "[A-Za-z0-9_]";

/// The name of the host's built-in plan tool. No plugin may use it.
pub const PLAN_TOOL: &str = "execute_tool_plan";

/// The name of the host's built-in search tool; reserved whether or not the
/// host serves it, so switching it on never collides with a plugin.
pub const SEARCH_TOOL: &str = "tool_search";

/// The name of the host's built-in code-mode tool (a script that calls
/// tools). No plugin may use it.
pub const CODE_TOOL: &str = "execute_code";

/// Names the host reserves for its own built-in tools.
pub const RESERVED_NAMES: &[&str] = &[PLAN_TOOL, SEARCH_TOOL, CODE_TOOL];

/// Checks a tool name against the rule.
///
/// # Errors
/// A message saying which part of the rule the name breaks and how to fix
/// it (it does not repeat the name).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the name is blank; give the tool a name of [A-Za-z0-9_]".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "the name is {} characters long; use at most {MAX_NAME_LEN}",
            name.len()
        ));
    }
    if let Some(bad) = name.chars().find(|c| !ident::TOOL.allows_char(*c)) {
        return Err(format!(
            "the name contains {bad:?}; use only letters, digits and underscores"
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err("the name is reserved for a corral built-in tool; rename it".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_of_the_rule() {
        assert!(check_name("word_count").is_ok());
        assert!(check_name(&"a".repeat(MAX_NAME_LEN)).is_ok());
        let too_long = check_name(&"a".repeat(MAX_NAME_LEN + 1)).unwrap_err();
        assert!(too_long.contains("at most 64"), "{too_long}");
        assert!(check_name(" ").unwrap_err().contains("blank"));
        assert!(check_name("a-b").unwrap_err().contains("'-'"));
        for reserved in RESERVED_NAMES {
            assert!(check_name(reserved).unwrap_err().contains("reserved"));
        }
    }
}
