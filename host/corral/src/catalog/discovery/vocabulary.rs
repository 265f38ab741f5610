//! The words behind `tool_search`'s ranking ([`rank`](super::rank)): which
//! words carry no meaning, which phrases and words mean the same, which
//! verbs name what a tool does, and which words negate the next. One table
//! each, applied to tools and queries alike. The tables hold general
//! English and common software vocabulary for what tools do (no tool's
//! name), and a word belongs here only when it means the same in every
//! catalog. They were grown against the evaluation set in
//! `tests/fixtures/catalog`, so that set flatters them; the set written
//! afterwards and never tuned against is the honest measure (`BENCHMARKS.md`).

/// English function words, dropped from tools and queries.
#[rustfmt::skip]
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "did", "do",
    "does", "don", "for", "from", "give", "has", "have", "how", "i", "in", "into", "is", "it",
    "its", "just", "me", "my", "need", "now", "of", "on", "or", "our", "please", "should", "so",
    "some", "than", "that", "the", "their", "them", "then", "there", "these", "this", "those",
    "to", "tool", "tools", "up", "us", "want", "was", "we", "were", "what", "which", "will",
    "with", "would", "yet", "you", "your",
];

/// Two-word phrases that mean one word; each becomes that word before
/// anything else happens (so `how many` is `count`, then stemmed).
#[rustfmt::skip]
pub const PHRASES: &[(&str, &str, &str)] = &[
    ("how", "many", "count"),
    ("figure", "out", "compute"),
    ("work", "out", "compute"),
    ("look", "up", "search"),
    ("kick", "off", "start"),
    ("turn", "on", "start"),
    ("turn", "off", "stop"),
    ("spin", "up", "create"),
    ("jot", "down", "write"),
    ("money", "back", "refund"),
    ("comma", "separated", "csv"),
    ("back", "up", "backup"),
    ("pass", "along", "forward"),
    ("look", "over", "review"),
    ("roll", "back", "rollback"),
    ("thumbs", "up", "reaction"),
    ("speech", "to", "transcribe"),
    ("look", "at", "read"),
    ("show", "how", "explain"),
    ("url", "friendly", "slug"),
    ("pay", "out", "payout"),
];

/// Words that mean the same to someone looking for a tool. The first word
/// of each group is what the others become; every word is stemmed first,
/// so inflections follow (`removing` is `remove` is `delete`).
#[rustfmt::skip]
pub const SYNONYMS: &[&[&str]] = &[
    &["delete", "remove", "erase", "destroy", "discard", "wipe", "purge", "trash", "unlink"],
    &["fetch", "download", "retrieve", "scrape", "crawl"],
    &["hash", "digest", "checksum", "fingerprint"],
    &["write", "save", "store", "persist", "overwrite", "jot"],
    &["create", "add", "new"],
    &["update", "modify", "change", "amend"],
    &["search", "find", "lookup", "locate", "look"],
    &["list", "enumerate", "all"],
    &["compare", "diff", "versus", "vs"],
    &["check", "verify", "validate", "confirm"],
    &["compute", "calculate", "calculation"],
    &["math", "maths", "arithmetic", "percent", "percentage"],
    &["count", "tally"],
    &["text", "string", "str"],
    &["url", "link", "href"],
    &["note", "memo", "notes"],
    &["average", "mean"],
    &["summary", "summarize", "summarise", "summarization", "summarisation"],
    &["meeting", "appointment", "event"],
    &["issue", "ticket", "bug"],
    &["repository", "repo"],
    &["message", "msg"],
    &["email", "mail", "e-mail", "inbox"],
    &["image", "picture", "photo"],
    &["stop", "cancel", "abort", "halt", "kill", "terminate"],
    &["rollback", "revert", "undo"],
    &["fail", "broke", "broken", "crash"],
    &["secret", "credential", "credentials", "password", "token"],
    &["share", "access", "permission", "permissions"],
    &["reaction", "react", "emoji"],
    &["convert", "turn", "transform"],
    &["helpdesk", "support"],
    &["later", "tomorrow", "tonight"],
    &["session", "connection"],
    &["automation", "automate", "automatically", "automatic"],
    &["start", "launch", "trigger", "begin", "boot"],
    &["instance", "vm"],
    &["release", "publish", "ship"],
    &["merge", "combine", "consolidate"],
    &["weather", "forecast"],
    &["customer", "client"],
    &["deal", "opportunity"],
    &["refund", "reimburse", "repay"],
    &["dns", "subdomain"],
    &["batch", "bulk", "chain", "sequence"],
    &["regex", "regexp", "pattern"],
    &["show", "display", "view", "print"],
    &["file", "document", "doc", "spreadsheet"],
];

/// Verbs that name what a tool does. A query term that is one of them (as
/// a token: stemmed, synonyms applied) and occurs in a tool's *name* counts
/// [`ACTION_BOOST`](super::rank::ACTION_BOOST) times there: a query's action decides between tools
/// about the same thing (`cancel the plan` is `pay_cancel_subscription`,
/// not `pay_create_subscription`).
#[rustfmt::skip]
pub const ACTIONS: &[&str] = &[
    "add", "apply", "archive", "assign", "bump", "cancel", "charge", "check", "close", "compare",
    "compute", "convert", "copy", "count", "create", "decode", "delete", "describe", "detect",
    "download", "encode", "escalate", "evaluate", "explain", "export", "extract", "fetch",
    "find", "forward", "generate", "get", "invite", "invoke", "list", "mark", "merge", "move",
    "parse", "pin", "post", "promote", "read", "refund", "release", "remove", "rename", "render",
    "reply", "request", "resize", "restore", "retry", "rollback", "run", "schedule", "search",
    "send", "set", "share", "start", "stop", "subscribe", "track", "transcribe", "translate",
    "update", "upload", "void", "write",
];

/// Words after which the next word is what the query does *not* want
/// (`don't send yet`): that word is left out.
pub const NEGATIONS: &[&str] = &["not", "t", "never", "without", "no"];
