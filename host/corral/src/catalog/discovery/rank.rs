//! Free-text ranking for `tool_search`: which tools a model's words mean.
//!
//! A lexical retrieval model, since no model weights can be loaded here.
//! Tools and queries go through the same analysis:
//! - **Words**: split on anything that is not a letter or a digit, so
//!   `notes_delete` is `notes delete`; lowercased; two-word phrases with
//!   one meaning joined first ([`PHRASES`](super::vocabulary::PHRASES): `how many` is `count`, `pass
//!   this email along` is `forward`, with up to [`PHRASE_GAP`] words
//!   between).
//! - **Tokens**: English function words and plain numbers dropped
//!   ([`STOP_WORDS`](super::vocabulary::STOP_WORDS); numbers are values, not capabilities); stemmed with
//!   Snowball's English stemmer (`rust-stemmers`), so `saved`, `saving` and
//!   `saves` meet; then mapped through a table of synonyms ([`SYNONYMS`](super::vocabulary::SYNONYMS):
//!   `remove` is `delete`, `digest` is `hash`, `download` is `fetch`, ...).
//!
//! Queries get three more steps:
//! - **Unknown words**: a comparative or superlative of a known word is
//!   that word (`slowest` is `slow`); otherwise a word found in no tool is
//!   replaced by the closest word of a tool *name* within one edit (two
//!   for words of eight letters or more; optimal string alignment, so a
//!   swap of two letters is one edit): `sha265` finds `sha256`, `base46`
//!   finds `base64`. Nothing else is fuzzy, so long descriptions do not
//!   match everything.
//! - **Term weights**: a word after a negation ([`NEGATIONS`](super::vocabulary::NEGATIONS): `don't send`)
//!   is left out; a past participle after the first word usually describes
//!   the object (`a saved note`, `a file I deleted`) and weighs
//!   [`PARTICIPLE_WEIGHT`].
//! - **Actions**: a term that names what a tool does ([`ACTIONS`](super::vocabulary::ACTIONS)) counts
//!   [`ACTION_BOOST`] times in a tool's name.
//!
//! The score of a tool is BM25 (the `bm25` crate: k1 1.2, b 0.75, each
//! field's average length fitted to the catalog) summed over the query's
//! terms and four fields with weights ([`FIELDS`]: the name counts most,
//! then keywords, category, description), times the square of the share of
//! the query's information it matches (each term weighted by its inverse
//! document frequency; a term no tool has does not count): a tool that
//! matches more of what the query says, and its rarer words, ranks above
//! one that matches a single common word very well.
//!
//! A tool is a match only when it scores at least [`RELATIVE_FLOOR`] of the
//! best tool's score, so `total_matches` counts the tools that are about
//! the query, not every tool sharing a word with it.
//!
//! Measured on `tests/fixtures/catalog`'s query sets (`tests/library/search.rs`;
//! figures in `BENCHMARKS.md`).

use std::collections::{BTreeMap, BTreeSet};

use bm25::{
    Embedder, EmbedderBuilder, Embedding, Scorer, TokenEmbedder, TokenEmbedding, Tokenizer,
};
use rust_stemmers::{Algorithm, Stemmer};

use super::vocabulary::{ACTIONS, NEGATIONS, PHRASES, STOP_WORDS, SYNONYMS};
use crate::catalog::registry::Tool;

/// The fields of a tool and their weights.
pub const FIELDS: [(&str, f32); 4] = [
    ("name", 3.0),
    ("keywords", 2.0),
    ("category", 1.5),
    ("description", 1.0),
];

/// A match scores at least this share of the best match: 0.35.
pub const RELATIVE_FLOOR: f32 = 0.35;

/// The weight of a past participle after a query's first word: 0.5.
pub const PARTICIPLE_WEIGHT: f32 = 0.5;

/// How much more an action term counts in a tool's name: 2.
pub const ACTION_BOOST: f32 = 2.0;

/// How many words may stand between the two words of a phrase (`pass this
/// email along`): 2.
pub const PHRASE_GAP: usize = 2;

/// Tool and query text to tokens.
struct Analyzer {
    stemmer: Stemmer,
    stop: BTreeSet<&'static str>,
    /// Stem to the stem of its group's first word.
    synonyms: BTreeMap<String, String>,
}

impl Analyzer {
    fn new() -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut synonyms = BTreeMap::new();
        for group in SYNONYMS {
            let canonical = stemmer.stem(group[0]).into_owned();
            for word in *group {
                for part in split(word) {
                    synonyms.insert(stemmer.stem(&part).into_owned(), canonical.clone());
                }
            }
        }
        Self {
            stemmer,
            stop: STOP_WORDS.iter().copied().collect(),
            synonyms,
        }
    }

    /// The token of one lowercase word, or `None` for a stop word or a
    /// number (a value, not a capability).
    fn token(&self, word: &str) -> Option<String> {
        if self.stop.contains(word) || word.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let stem = self.stemmer.stem(word);
        Some(
            self.synonyms
                .get(stem.as_ref())
                .cloned()
                .unwrap_or_else(|| stem.into_owned()),
        )
    }
}

impl Analyzer {
    /// The words of `text` with [`PHRASES`](super::vocabulary::PHRASES) joined into their word: the
    /// phrase's word takes the place of its first word, and its second word
    /// (at most [`PHRASE_GAP`] words later) is dropped.
    fn words(text: &str) -> Vec<String> {
        let mut words: Vec<Option<String>> = split(text).map(Some).collect();
        for i in 0..words.len() {
            let Some(first) = words[i].clone() else {
                continue;
            };
            let found = (i + 1..words.len().min(i + 2 + PHRASE_GAP)).find_map(|j| {
                let second = words[j].as_deref()?;
                PHRASES
                    .iter()
                    .find(|(a, b, _)| *a == first && *b == second)
                    .map(|(_, _, word)| (j, *word))
            });
            if let Some((j, word)) = found {
                words[i] = Some(word.to_string());
                words[j] = None;
            }
        }
        words.into_iter().flatten().collect()
    }
}

impl Tokenizer for Analyzer {
    fn tokenize(&self, text: &str) -> Vec<String> {
        Self::words(text)
            .iter()
            .filter_map(|w| self.token(w))
            .collect()
    }
}

/// The lowercase words of `text`: runs of letters and digits.
fn split(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// One field: its weight and its scorer (documents embedded by an embedder
/// fitted to the field's texts).
struct Field {
    weight: f32,
    /// Whether it is the name, where [`ACTIONS`](super::vocabulary::ACTIONS) count more.
    is_name: bool,
    scorer: Scorer<usize, u32>,
}

/// The ranking index of one catalog.
pub(crate) struct Index {
    analyzer: Analyzer,
    fields: Vec<Field>,
    /// Tool names, by document number.
    names: Vec<String>,
    /// Every token of every field: a query word with none of these is a
    /// typo candidate.
    vocabulary: BTreeSet<String>,
    /// The words of tool names (and whole names), for typo correction.
    name_words: BTreeSet<String>,
    /// The tokens of [`ACTIONS`](super::vocabulary::ACTIONS).
    actions: BTreeSet<String>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("tools", &self.names.len())
            .finish_non_exhaustive()
    }
}

/// The text of `tool`'s field `field`.
fn field_text(tool: &Tool, field: &str) -> String {
    let spec = tool.spec();
    match field {
        "name" => spec.name.clone(),
        "keywords" => spec.metadata.keywords.join(" "),
        "category" => spec.metadata.category.clone(),
        _ => spec.description.clone(),
    }
}

impl Index {
    /// The index of `tools`.
    pub fn new(tools: &[&Tool]) -> Self {
        let analyzer = Analyzer::new();
        let mut vocabulary = BTreeSet::new();
        let mut name_words = BTreeSet::new();
        for tool in tools {
            let name = &tool.spec().name;
            name_words.insert(name.to_lowercase());
            name_words.extend(split(name));
        }
        let fields = FIELDS
            .iter()
            .map(|(field, weight)| {
                let texts: Vec<String> = tools.iter().map(|t| field_text(t, field)).collect();
                let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
                for text in &texts {
                    vocabulary.extend(analyzer.tokenize(text));
                }
                let embedder: Embedder<u32, Analyzer> =
                    EmbedderBuilder::with_tokenizer_and_fit_to_corpus(Analyzer::new(), &corpus)
                        .build();
                let mut scorer = Scorer::new();
                for (i, text) in texts.iter().enumerate() {
                    scorer.upsert(&i, embedder.embed(text));
                }
                Field {
                    weight: *weight,
                    is_name: *field == "name",
                    scorer,
                }
            })
            .collect();
        let actions = ACTIONS.iter().filter_map(|a| analyzer.token(a)).collect();
        Self {
            analyzer,
            fields,
            names: tools.iter().map(|t| t.spec().name.clone()).collect(),
            vocabulary,
            name_words,
            actions,
        }
    }

    /// `query` with each word that matches no tool replaced by the closest
    /// word of a tool name, when one is near enough (module docs).
    fn corrected(&self, query: &str) -> String {
        split(query)
            .map(|word| {
                let known = self
                    .analyzer
                    .token(&word)
                    .is_none_or(|token| self.vocabulary.contains(&token));
                if known || word.chars().count() < 5 {
                    return word;
                }
                // A comparative or superlative of a known word (`slowest`,
                // `bigger`): the word itself.
                for suffix in ["est", "er"] {
                    if let Some(base) = word.strip_suffix(suffix) {
                        // `bigger` is `big` + a doubled `g` + `er`.
                        let mut undoubled = base.chars();
                        undoubled.next_back();
                        let bases = [base.to_string(), undoubled.as_str().to_string()];
                        // Short bases mislead (`newest` is not `new`).
                        for base in bases.into_iter().filter(|b| b.chars().count() >= 4) {
                            if self
                                .analyzer
                                .token(&base)
                                .is_some_and(|t| self.vocabulary.contains(&t))
                            {
                                return base;
                            }
                        }
                    }
                }
                let allowed = if word.chars().count() >= 8 { 2 } else { 1 };
                self.name_words
                    .iter()
                    .map(|candidate| (strsim::osa_distance(&word, candidate), candidate))
                    .filter(|(distance, _)| *distance <= allowed)
                    .min()
                    .map_or(word.clone(), |(_, candidate)| candidate.clone())
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The weighted terms of `query` (after typo correction): each word's
    /// token once, at the highest weight it gets. A past participle after
    /// the first word (`saved notes`, `a file I deleted`) usually describes
    /// the object rather than asks for the action, so it weighs
    /// [`PARTICIPLE_WEIGHT`].
    fn terms(&self, query: &str) -> Vec<(String, f32)> {
        let mut terms: Vec<(String, f32)> = Vec::new();
        let words = Analyzer::words(&self.corrected(query));
        for (i, word) in words.iter().enumerate() {
            if i > 0 && NEGATIONS.contains(&words[i - 1].as_str()) {
                continue;
            }
            let Some(token) = self.analyzer.token(word) else {
                continue;
            };
            let participle = i > 0 && word.len() >= 5 && word.ends_with("ed");
            let weight = if participle { PARTICIPLE_WEIGHT } else { 1.0 };
            match terms.iter_mut().find(|(t, _)| *t == token) {
                Some((_, w)) => *w = w.max(weight),
                None => terms.push((token, weight)),
            }
        }
        terms
    }

    /// The tools that match `query`, best first, as (name, score), above
    /// the floor; ties by name. A tool's score is, over the query's terms
    /// and the fields, the sum of term weight × field weight × BM25, times
    /// the share of the query's term weight it matches (coordination: a
    /// tool that matches more of the query ranks above one that matches a
    /// single word very well).
    pub fn rank(&self, query: &str) -> Vec<(&str, f32)> {
        let terms = self.terms(query);
        let mut scores: BTreeMap<usize, (f32, BTreeSet<usize>)> = BTreeMap::new();
        // How many tools each term occurs in (any field).
        let mut found_in = vec![BTreeSet::new(); terms.len()];
        for (t, (token, weight)) in terms.iter().enumerate() {
            let query = Embedding(vec![TokenEmbedding {
                index: <u32 as TokenEmbedder>::embed(token),
                value: 1.0,
            }]);
            let action = *weight >= 1.0 && self.actions.contains(token);
            for field in &self.fields {
                let boost = if action && field.is_name {
                    ACTION_BOOST
                } else {
                    1.0
                };
                for hit in field.scorer.matches(&query) {
                    let entry = scores.entry(hit.id).or_default();
                    entry.0 += weight * boost * field.weight * hit.score;
                    entry.1.insert(t);
                    found_in[t].insert(hit.id);
                }
            }
        }
        // What each term tells apart: its weight times its inverse document
        // frequency; a term no tool has tells nothing.
        let n = self.names.len() as f32;
        let information: Vec<f32> = terms
            .iter()
            .zip(&found_in)
            .map(|((_, weight), docs)| {
                let df = docs.len() as f32;
                if df == 0.0 {
                    0.0
                } else {
                    weight * (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
                }
            })
            .collect();
        let total: f32 = information.iter().sum();
        let scored: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(doc, (score, matched))| {
                let share = matched.iter().map(|&t| information[t]).sum::<f32>() / total;
                (doc, score * share * share)
            })
            .collect();
        let best = scored.iter().map(|(_, s)| *s).fold(0.0_f32, f32::max);
        if best <= 0.0 {
            return Vec::new();
        }
        let mut ranked: Vec<(&str, f32)> = scored
            .into_iter()
            .filter(|(_, score)| *score >= best * RELATIVE_FLOOR)
            .map(|(i, score)| (self.names[i].as_str(), score))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_queries_rank_without_panicking() {
        let index = Index::new(&[]);
        for query in [
            "",
            "   ",
            "éer",
            "caféest",
            "日本語er",
            &"x".repeat(10_000),
            "don't",
        ] {
            assert!(index.rank(query).is_empty(), "{query}");
        }
    }

    #[test]
    fn words_split_stem_and_meet_their_synonyms() {
        let a = Analyzer::new();
        assert_eq!(a.tokenize("notes_delete"), a.tokenize("note remove"));
        assert_eq!(
            a.tokenize("Removing the saved notes"),
            a.tokenize("delete save note")
        );
        assert_eq!(a.tokenize("SHA-256 digest"), vec!["sha", "hash"]);
        assert!(a.tokenize("a the of to").is_empty());
    }
}
