//! The leak scan: every form a plugin's secrets may take, matched in one
//! pass ([`Redactor`], an Aho-Corasick automaton built once per plugin load),
//! and the per-call [`Leaks`] that redacts a text or a byte stream, counts
//! what it replaced, and reports it (a WARN line and the
//! `corral_secret_redactions_total{tool, place}` metric).
//!
//! The forms (IronClaw scans the same plus percent-decoded URLs, which the
//! HTTP gate does too): the secret itself; lowercase and uppercase hex;
//! percent-encoded with uppercase and with lowercase digits; JSON-escaped
//! (as is, with `\uXXXX` for non-ASCII characters in either case, with `\/`,
//! and with Go's `\u003c` for `<>&`); and base64, standard
//! and URL-safe, at each of the three byte alignments the secret can start at
//! inside a longer encoded text. Forms shorter than 8 bytes are not searched
//! (they would match ordinary text). Each match becomes
//! `[secret NAME redacted]`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use aho_corasick::{AhoCorasick, MatchKind};

/// Shortest form of a secret that is searched for, in bytes: 8.
const MIN_FORM: usize = 8;

/// `bytes` percent-encoded (RFC 3986 unreserved characters kept), with
/// uppercase or lowercase hex digits.
fn percent(bytes: &[u8], upper: bool) -> String {
    bytes
        .iter()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(*b).to_string()
            }
            _ if upper => format!("%{b:02X}"),
            _ => format!("%{b:02x}"),
        })
        .collect()
}

/// `json` (escaped JSON text) with every non-ASCII character as `\uXXXX`
/// (UTF-16 units), hex digits in `upper` case or not.
fn ascii_escaped(json: &str, upper: bool) -> String {
    json.chars()
        .map(|c| {
            if c.is_ascii() {
                return c.to_string();
            }
            let mut units = [0u16; 2];
            c.encode_utf16(&mut units)
                .iter()
                .map(|u| {
                    if upper {
                        format!("\\u{u:04X}")
                    } else {
                        format!("\\u{u:04x}")
                    }
                })
                .collect()
        })
        .collect()
}

/// The forms `secret` may leak in (see the module docs), longest first.
fn forms(secret: &str) -> Vec<String> {
    use base64::Engine as _;
    let bytes = secret.as_bytes();
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json.trim_matches('"').to_string();
    let ascii_json = ascii_escaped(&json, false);
    let ascii_upper = ascii_escaped(&json, true);
    // What other encoders write: `\/` (PHP), `\u003c` for `<>&` (Go),
    // uppercase `\u00E9`.
    let slashed = json.replace('/', "\\/");
    let go = json
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    let mut forms = vec![
        secret.to_string(),
        hex::encode(bytes),
        hex::encode_upper(bytes),
        percent(bytes, true),
        percent(bytes, false),
        json,
        ascii_json,
        ascii_upper,
        slashed,
        go,
    ];
    for engine in [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::URL_SAFE,
    ] {
        for shift in 0..3usize {
            let mut shifted = vec![0u8; shift];
            shifted.extend_from_slice(bytes);
            let text = engine.encode(&shifted);
            // Characters i with 6i >= 8·shift and 6i + 6 <= 8·(shift + n):
            // those that depend on the secret's bytes alone.
            let start = (8 * shift).div_ceil(6);
            let end = (8 * (shift + bytes.len())) / 6;
            if end > start {
                forms.push(text[start..end.min(text.len())].to_string());
            }
        }
    }
    forms.retain(|f| f.len() >= MIN_FORM);
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}

/// Every form of a plugin's secrets, as one automaton.
pub struct Redactor {
    matcher: AhoCorasick,
    /// `[secret NAME redacted]` for each pattern of `matcher`.
    replacements: Vec<Arc<str>>,
    /// The longest pattern, in bytes.
    longest: usize,
    /// The patterns themselves, to tell what may begin one.
    forms: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Redactor({} forms, values hidden)",
            self.replacements.len()
        )
    }
}

impl Redactor {
    /// The redactor of `secrets` (name, value); `None` when no secret has a
    /// form long enough to search for.
    pub fn new(secrets: &[(String, String)]) -> Option<Arc<Self>> {
        let mut patterns = Vec::new();
        let mut replacements = Vec::new();
        for (name, value) in secrets {
            let replacement: Arc<str> = Arc::from(format!("[secret {name} redacted]"));
            for form in forms(value) {
                patterns.push(form);
                replacements.push(replacement.clone());
            }
        }
        if patterns.is_empty() {
            return None;
        }
        let longest = patterns.iter().map(String::len).max().unwrap_or(0);
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok()?;
        Some(Arc::new(Self {
            matcher,
            replacements,
            longest,
            forms: patterns,
        }))
    }

    /// `input` with every form replaced, and how many were; matches that
    /// start at or after `limit` are left (with their bytes) for later.
    /// Answers the output and how many input bytes it covers.
    fn replace(&self, input: &[u8], limit: usize) -> (Vec<u8>, usize, usize) {
        let mut out = Vec::with_capacity(input.len());
        let (mut at, mut count) = (0, 0);
        for found in self.matcher.find_iter(input) {
            if found.start() >= limit {
                break;
            }
            out.extend_from_slice(&input[at..found.start()]);
            out.extend_from_slice(self.replacements[found.pattern().as_usize()].as_bytes());
            at = found.end();
            count += 1;
        }
        let covered = at.max(limit.min(input.len()));
        out.extend_from_slice(&input[at..covered]);
        (out, covered, count)
    }

    /// The length of the longest proper suffix of `bytes` that is a prefix
    /// of some form.
    fn open_prefix(&self, bytes: &[u8]) -> usize {
        let most = bytes.len().min(self.longest.saturating_sub(1));
        (1..=most)
            .rev()
            .find(|&k| {
                let tail = &bytes[bytes.len() - k..];
                self.forms.iter().any(|f| f.as_bytes().starts_with(tail))
            })
            .unwrap_or(0)
    }

    /// `text` with every form replaced, and how many were.
    pub fn text<'t>(&self, text: &'t str) -> (Cow<'t, str>, usize) {
        if !self.matcher.is_match(text) {
            return (Cow::Borrowed(text), 0);
        }
        let (out, _, count) = self.replace(text.as_bytes(), text.len());
        // Patterns are whole UTF-8 strings, so matches start and end on
        // character boundaries and the result stays UTF-8.
        let out = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        (Cow::Owned(out), count)
    }

    /// The part of the stream buffer `held` that can be passed on, with
    /// every form in it replaced; what may still be the start of a form
    /// stays in `held`, unless `last`. Answers the bytes and the count.
    pub fn stream(&self, held: &mut Vec<u8>, last: bool) -> (Vec<u8>, usize) {
        // Held back: the longest end of `held` that begins some form (and
        // nothing when none does, so a stream's text reaches the guest at
        // once). A form starting before `limit` lies wholly inside `held`.
        let limit = if last {
            held.len()
        } else {
            held.len() - self.open_prefix(held)
        };
        let (out, covered, count) = self.replace(held, limit);
        held.drain(..covered);
        (out, count)
    }
}

/// The leak scan of one call: the plugin's [`Redactor`] (if it has secrets)
/// and the call's redaction count, shared by every place that scans.
#[derive(Clone, Debug)]
pub struct Leaks {
    redactor: Option<Arc<Redactor>>,
    tool: Arc<str>,
    count: Arc<AtomicU32>,
}

impl Leaks {
    /// The scan of a call of `tool`, counting into `count`.
    pub fn new(redactor: Option<Arc<Redactor>>, tool: Arc<str>, count: Arc<AtomicU32>) -> Self {
        Self {
            redactor,
            tool,
            count,
        }
    }

    /// The redactor, when the plugin has secrets to scan for.
    pub fn redactor(&self) -> Option<&Arc<Redactor>> {
        self.redactor.as_ref()
    }

    /// Counts `found` redactions at `place` (`output`, `log`,
    /// `response-body`...): the call's count, the metric and a WARN line.
    pub fn note(&self, place: &'static str, found: usize) {
        if found == 0 {
            return;
        }
        let n = u32::try_from(found).unwrap_or(u32::MAX);
        self.count.fetch_add(n, Ordering::Relaxed);
        metrics::counter!(
            "corral_secret_redactions_total",
            "tool" => self.tool.to_string(),
            "place" => place
        )
        .increment(found as u64);
        tracing::warn!(
            tool = &*self.tool,
            place,
            redacted = found,
            "a secret the host injects for this plugin appeared in guest-visible data; redacted"
        );
    }

    /// `text` with the plugin's secrets redacted (counted at `place`).
    pub fn text<'t>(&self, place: &'static str, text: &'t str) -> Cow<'t, str> {
        let Some(redactor) = &self.redactor else {
            return Cow::Borrowed(text);
        };
        let (out, found) = redactor.text(text);
        self.note(place, found);
        out
    }

    /// Bytes a guest hands out (an image, audio, a blob) with the plugin's
    /// secrets redacted, counted at `place`: read as text (invalid UTF-8
    /// replaced); when a secret's form is in them, they become the redacted
    /// text, so the secret never leaves and the broken data shows why.
    /// Without secrets to look for, the bytes are not read at all.
    pub fn bytes(&self, place: &'static str, data: &mut Vec<u8>) {
        let Some(redactor) = &self.redactor else {
            return;
        };
        let redacted = {
            let text = String::from_utf8_lossy(data);
            let (out, found) = redactor.text(&text);
            self.note(place, found);
            (found > 0).then(|| out.into_owned())
        };
        if let Some(redacted) = redacted {
            *data = redacted.into_bytes();
        }
    }

    /// As [`Self::text`], for an owned string.
    pub fn string(&self, place: &'static str, text: String) -> String {
        match self.text(place, &text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(clean) => clean,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secret: &str) -> Arc<Redactor> {
        Redactor::new(&[("API_KEY".to_string(), secret.to_string())]).expect("forms")
    }

    #[test]
    fn every_form_of_a_secret_is_redacted() {
        use base64::Engine as _;
        let secret = "sk-live/0123456789é\"";
        let redactor = redactor(secret);
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut leaks = vec![
            format!("token {secret} here"),
            format!("hex {}", hex::encode(secret)),
            format!("HEX {}", hex::encode_upper(secret)),
            "url sk-live%2F0123456789%C3%A9%22!".to_string(),
            "url sk-live%2f0123456789%c3%a9%22!".to_string(),
            format!("json {}", serde_json::json!({ "k": secret })),
            "ascii json \"sk-live/0123456789\\u00e9\\\"\"".to_string(),
            "upper \"sk-live/0123456789\\u00E9\\\"\"".to_string(),
            "php \"sk-live\\/0123456789\u{e9}\\\"\"".to_string(),
            format!("auth {}", b64.encode(format!("user:{secret}"))),
        ];
        for prefix in ["", "a", "ab", "abc"] {
            leaks.push(b64.encode(format!("{prefix}{secret}")));
            leaks.push(
                base64::engine::general_purpose::URL_SAFE.encode(format!("{prefix}{secret}?")),
            );
        }
        for leak in leaks {
            let (clean, count) = redactor.text(&leak);
            assert!(count >= 1, "not found in {leak}");
            assert!(clean.contains("[secret API_KEY redacted]"), "{clean}");
            assert!(!clean.contains("0123456789"), "{clean}");
        }
        let (clean, count) = redactor.text("nothing to see");
        assert_eq!((clean.as_ref(), count), ("nothing to see", 0));
        assert!(Redactor::new(&[("SHORT".into(), "abc".into())]).is_none());
    }

    #[test]
    fn a_stream_is_redacted_whatever_the_chunk_boundaries() {
        let secret = "sk-live-0123456789";
        let redactor = redactor(secret);
        let text = format!("head {secret} middle {} tail {secret}", hex::encode(secret));
        let expected = redactor.text(&text).0.into_owned();
        for size in 1..=text.len() {
            let mut held = Vec::new();
            let mut out = Vec::new();
            let mut total = 0;
            for chunk in text.as_bytes().chunks(size) {
                held.extend_from_slice(chunk);
                let (part, n) = redactor.stream(&mut held, false);
                out.extend(part);
                total += n;
            }
            let (part, n) = redactor.stream(&mut held, true);
            out.extend(part);
            total += n;
            assert!(held.is_empty());
            assert_eq!(
                String::from_utf8(out).expect("utf-8"),
                expected,
                "chunks of {size}"
            );
            assert_eq!(total, 3, "chunks of {size}");
        }
        // Text that cannot begin a form is passed on at once.
        let mut held = b"plain text, nothing secret".to_vec();
        let (out, _) = redactor.stream(&mut held, false);
        assert_eq!(out, b"plain text, nothing secret");
        let mut held = b"ends with sk-li".to_vec();
        let (out, _) = redactor.stream(&mut held, false);
        assert_eq!(
            (out.as_slice(), held.as_slice()),
            (&b"ends with "[..], &b"sk-li"[..])
        );
    }

    #[test]
    fn leaks_count_every_place() {
        let count = Arc::new(AtomicU32::new(0));
        let leaks = Leaks::new(
            Some(redactor("sk-live-0123456789")),
            "t".into(),
            count.clone(),
        );
        assert_eq!(
            leaks.string("log", "a sk-live-0123456789 b".into()),
            "a [secret API_KEY redacted] b"
        );
        assert_eq!(leaks.text("output", "clean"), "clean");
        assert_eq!(count.load(Ordering::Relaxed), 1);
        let none = Leaks::new(None, "t".into(), count.clone());
        assert_eq!(none.text("log", "sk-live-0123456789"), "sk-live-0123456789");
    }

    #[test]
    fn bytes_with_a_secret_become_the_redacted_text_and_others_stay_as_they_are() {
        let count = Arc::new(AtomicU32::new(0));
        let leaks = Leaks::new(
            Some(redactor("sk-live-0123456789")),
            "t".into(),
            count.clone(),
        );
        let mut png = b"\x89PNG\r\n\x1a\n\xff\x00data".to_vec();
        let before = png.clone();
        leaks.bytes("output", &mut png);
        assert_eq!(
            png, before,
            "bytes without a secret are untouched, invalid UTF-8 and all"
        );
        let mut leaky = b"\x89PNG\xffsk-live-0123456789".to_vec();
        leaks.bytes("sampling", &mut leaky);
        let text = String::from_utf8(leaky).expect("redacted bytes are the redacted text");
        assert!(
            text.contains("[secret API_KEY redacted]") && !text.contains("sk-live"),
            "{text}"
        );
        assert_eq!(count.load(Ordering::Relaxed), 1);
    }
}
