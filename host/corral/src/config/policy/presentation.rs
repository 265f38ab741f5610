//! The policy's `[presentation]` table: how a plugin's tools are shown to
//! models (prefix, renames, notes, replaced descriptions), validated with the
//! line of each bad entry.

use std::ops::Range;

use super::raw::RawPresentation;
use super::{Policy, PolicyError};

/// Validates `raw` into `policy`.
///
/// # Errors
/// The [`PolicyError`] `at` builds for the first bad entry: a prefix with
/// characters other than letters, digits and `_`, a rename to an invalid
/// name, a note or description with control or bidi characters.
pub(super) fn apply(
    raw: RawPresentation,
    policy: &mut Policy,
    at: &dyn Fn(Range<usize>, String) -> PolicyError,
) -> Result<(), PolicyError> {
    if let Some(prefix) = raw.prefix {
        let value = prefix.get_ref();
        corral_names::ident::PREFIX
            .check(value)
            .map_err(|m| at(prefix.span(), m))?;
        policy.prefix = Some(value.clone());
    }
    for (from, to) in raw.rename {
        crate::model::names::check_name(to.get_ref())
            .map_err(|m| at(to.span(), format!("rename of `{from}`: {m}")))?;
        policy.rename.insert(from, to.into_inner());
    }
    for (tool, note) in raw.notes {
        corral_names::text::check(&format!("the note of `{tool}`"), note.get_ref())
            .map_err(|m| at(note.span(), m))?;
        policy.notes.insert(tool, note.into_inner());
    }
    for (tool, description) in raw.descriptions {
        let value = description.get_ref();
        if value.trim().is_empty() {
            return Err(at(
                description.span(),
                format!("the description of `{tool}` is blank; write what the tool does"),
            ));
        }
        corral_names::text::check(&format!("the description of `{tool}`"), value)
            .map_err(|m| at(description.span(), m))?;
        policy.descriptions.insert(tool, description.into_inner());
    }
    Ok(())
}
