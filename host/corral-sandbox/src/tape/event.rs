//! The events of a tape: one per import result a guest received from a
//! source the host owns (a clock, a random generator, a file, an HTTP
//! exchange, an approval), plus the guest's log and progress lines. Plain
//! data with serde, so the library can store them (CBOR in a recording
//! file) and give them back to a replay.
//!
//! Every text here passed the leak scan before it was recorded: log,
//! progress and approval text, URLs and headers of outbound requests,
//! response bodies. A guest never holds a secret, so what it received
//! holds none either.

use serde::{Deserialize, Serialize};

/// One import result, in the order the guest received it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// A clock's `now` (`wasi:clocks`): the value the guest got. A
    /// clock's `resolution` is the host's, not recorded.
    Clock {
        /// Which clock.
        clock: ClockKind,
        /// Nanoseconds: since the Unix epoch (wall), or since an arbitrary
        /// start (monotonic).
        nanos: u64,
    },
    /// Random bytes (`wasi:random`), exactly as the guest got them.
    Random {
        /// `random` or `insecure`.
        source: RandomSource,
        /// The bytes.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// An outbound HTTP request and what the guest got back.
    Http(Box<HttpExchange>),
    /// A successful or failed `open-at`; the contents of a file opened to
    /// read are in the tape's [`FileCapture`]s.
    Open {
        /// The guest path, normalised.
        path: String,
        /// `read`, `write` or `create` (see
        /// [`FileOp`](crate::FileOp)).
        op: String,
        /// The WASI error code's name when it failed.
        error: Option<String>,
    },
    /// A `stat` or `stat-at`: what the guest was told about a path.
    Stat {
        /// The guest path, normalised.
        path: String,
        /// The answer.
        result: Result<Stat, String>,
    },
    /// One entry of a directory listing (`read-directory-entry`), or its
    /// end (`name` `None`).
    Entry {
        /// The listed directory's guest path.
        path: String,
        /// The entry's name; `None` at the end of the listing.
        name: Option<String>,
        /// `file`, `directory`, `symlink`, … ; empty at the end.
        kind: String,
    },
    /// A log line the host wrote for the guest (`corral:tool/host.log`),
    /// within [`MAX_LOG_LINES`](crate::MAX_LOG_LINES): an output, compared
    /// by a replay but not answered from.
    Log {
        /// `trace`, `debug`, `info`, `warn` or `error`.
        level: String,
        /// The text, cut and scanned.
        message: String,
    },
    /// A progress message (`host.progress`), within the same line budget.
    Progress {
        /// The text, cut and scanned.
        message: String,
    },
    /// Requests to the MCP client asked at once (WIT 0.3.0 `elicit`,
    /// `sample`, `roots`, `ask`) and the answers the guest got.
    Client {
        /// Each request as JSON text (`ClientRequest`).
        requests: Vec<String>,
        /// An answer per request, in order.
        answers: Vec<ClientReply>,
    },
    /// A `request-approval` and the decision the guest got.
    Approval {
        /// The guest's description, cut and scanned.
        description: String,
        /// What the guest got.
        decision: Decision,
    },
}

impl Event {
    /// The replay channel it belongs to: events are answered in order
    /// within their channel.
    pub(crate) fn channel(&self) -> Channel {
        match self {
            Self::Clock {
                clock: ClockKind::Wall,
                ..
            } => Channel::Wall,
            Self::Clock { .. } => Channel::Monotonic,
            Self::Random { .. } => Channel::Random,
            Self::Http(_) => Channel::Http,
            Self::Open { .. } | Self::Stat { .. } | Self::Entry { .. } => Channel::Files,
            Self::Log { .. } | Self::Progress { .. } => Channel::Output,
            Self::Approval { .. } => Channel::Approval,
            Self::Client { .. } => Channel::Client,
        }
    }

    /// The event in one line, for a divergence report: its import and its
    /// arguments, escaped, at most about 200 bytes.
    pub fn summary(&self) -> String {
        let text = match self {
            Self::Clock { clock, .. } => format!(
                "wasi:clocks/{}.now",
                match clock {
                    ClockKind::Wall => "wall-clock",
                    ClockKind::Monotonic => "monotonic-clock",
                }
            ),
            Self::Random { source, bytes } => format!(
                "wasi:random/{}({} bytes)",
                match source {
                    RandomSource::Secure => "random.get-random-bytes",
                    RandomSource::Insecure => "insecure.get-insecure-random-bytes",
                },
                bytes.len()
            ),
            Self::Http(exchange) => format!(
                "wasi:http/outgoing-handler.handle({} {})",
                exchange.method, exchange.url
            ),
            Self::Open { path, op, .. } => format!("wasi:filesystem open-at({path}, {op})"),
            Self::Stat { path, .. } => format!("wasi:filesystem stat({path})"),
            Self::Entry { path, .. } => format!("wasi:filesystem read-directory-entry({path})"),
            Self::Log { level, message } => format!("corral:tool/host.log({level}, {message:?})"),
            Self::Progress { message } => format!("corral:tool/host.progress({message:?})"),
            Self::Approval { description, .. } => {
                format!("corral:tool/host.request-approval({description:?})")
            }
            Self::Client { requests, .. } => {
                format!("corral:tool/client.ask({})", requests.join(", "))
            }
        };
        corral_names::text::escape(&corral_names::text::truncate(text, 200)).into_owned()
    }

    /// Its size as the recording cap counts it, in bytes (the payloads).
    pub(crate) fn weight(&self) -> usize {
        32 + match self {
            Self::Clock { .. } => 0,
            Self::Random { bytes, .. } => bytes.len(),
            Self::Http(exchange) => exchange.weight(),
            Self::Open { path, .. } | Self::Stat { path, .. } => path.len(),
            Self::Entry { path, name, .. } => path.len() + name.as_ref().map_or(0, String::len),
            Self::Log { message, .. } | Self::Progress { message } => message.len(),
            Self::Approval {
                description,
                decision,
            } => description.len() + decision.weight(),
            Self::Client { requests, answers } => {
                requests.iter().map(String::len).sum::<usize>()
                    + answers.iter().map(ClientReply::weight).sum::<usize>()
            }
        }
    }
}

/// The replay channels: events of one channel are answered in their
/// recorded order, independently of the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    Wall,
    Monotonic,
    Random,
    Http,
    Files,
    Output,
    Approval,
    Client,
}

impl Channel {
    pub(crate) const COUNT: usize = 8;

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// A WASI clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// `wasi:clocks/wall-clock`.
    Wall,
    /// `wasi:clocks/monotonic-clock`.
    Monotonic,
}

/// A WASI random source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RandomSource {
    /// `wasi:random/random`.
    Secure,
    /// `wasi:random/insecure`.
    Insecure,
}

/// An outbound request as the guest made it (its URL redacted, before the
/// host injected credentials) and what it got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HttpExchange {
    /// The method.
    pub method: String,
    /// The URL, redacted.
    pub url: String,
    /// The headers the guest set, scanned (values as bytes).
    pub headers: Vec<(String, serde_bytes::ByteBuf)>,
    /// The response, or the `wasi:http` error code the guest got; `None`
    /// when the call ended before either.
    pub response: Option<Result<HttpResponse, String>>,
}

impl HttpExchange {
    fn weight(&self) -> usize {
        let head: usize = self.headers.iter().map(|(n, v)| n.len() + v.len()).sum();
        let response = match &self.response {
            Some(Ok(response)) => response.weight(),
            Some(Err(code)) => code.len(),
            None => 0,
        };
        self.method.len() + self.url.len() + head + response
    }
}

/// A response as the guest received it: after the leak scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, serde_bytes::ByteBuf)>,
    /// The body as far as it was recorded.
    pub body: serde_bytes::ByteBuf,
    /// How the body ended.
    pub end: BodyEnd,
    /// Bytes of the body past the recording's cap, not recorded: a replay
    /// of this exchange is incomplete.
    pub cut: u64,
}

/// How a recorded response body ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyEnd {
    /// It was still streaming when the call ended (the guest stopped
    /// reading, or the call failed first).
    Open,
    /// It reached its end.
    Complete,
    /// It failed with this `wasi:http` error code.
    Failed(String),
}

impl HttpResponse {
    fn weight(&self) -> usize {
        let head: usize = self.headers.iter().map(|(n, v)| n.len() + v.len()).sum();
        head + self.body.len()
    }
}

/// What a `stat` told the guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stat {
    /// `file`, `directory`, `symlink`, … (the kind of an [`Event::Entry`]).
    pub kind: String,
    /// Hard links.
    pub links: u64,
    /// Size in bytes.
    pub size: u64,
    /// Access, modification and status-change times, as (seconds,
    /// nanoseconds) since the Unix epoch.
    pub times: [Option<(u64, u32)>; 3],
}

/// The decision a guest's `request-approval` got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "as", rename_all = "kebab-case")]
pub enum Decision {
    /// Go ahead.
    Continue,
    /// Go ahead with these arguments (JSON text).
    Edit {
        /// The revised arguments.
        arguments: String,
    },
    /// Exit early: the call failed as rejected.
    Reject {
        /// The reason.
        reason: String,
    },
    /// Nobody could decide; the call failed with a configuration error.
    Failed {
        /// The error's text.
        message: String,
    },
}

impl Decision {
    fn weight(&self) -> usize {
        match self {
            Self::Continue => 0,
            Self::Edit { arguments: text }
            | Self::Reject { reason: text }
            | Self::Failed { message: text } => text.len(),
        }
    }
}

/// What a request to the MCP client got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientReply {
    /// The answer (`ClientAnswer` as JSON).
    Answer(serde_json::Value),
    /// `unsupported`, with its text.
    Unsupported(String),
    /// `over-budget`, with its text.
    OverBudget(String),
    /// `failed`, with its text.
    Failed(String),
    /// The guest was stopped at the request (the call ended there), with
    /// the call's error.
    Stopped(String),
}

impl ClientReply {
    fn weight(&self) -> usize {
        match self {
            Self::Answer(value) => value.to_string().len(),
            Self::Unsupported(text)
            | Self::OverBudget(text)
            | Self::Failed(text)
            | Self::Stopped(text) => text.len(),
        }
    }
}

/// The contents of a file the guest opened to read, as it was when opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FileCapture {
    /// The guest path, normalised.
    pub path: String,
    /// The whole file, or `None` when it was larger than the room left in
    /// the recording: a replay then needs the file itself.
    pub contents: Option<serde_bytes::ByteBuf>,
    /// Its size in bytes.
    pub size: u64,
    /// Lowercase hex sha256 of its contents (of the bytes read, up to
    /// [`MAX_HASHED_BYTES`]).
    pub sha256: String,
}

/// The most bytes of a file too large to record that are read to give its
/// sha256: 256 MiB.
pub const MAX_HASHED_BYTES: u64 = 256 << 20;
