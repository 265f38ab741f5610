//! MCP over stdio: a raw JSON-RPC client (one request per line, each
//! response timed) against `corral serve` and against a trivial echo
//! responder, driven the same way in the same run. Their difference is
//! what corral's MCP layer and the call cost on the server side. rmcp's own
//! server (`rmcp_floor.rs`), in the same run, gives two floors: with a
//! native tool (rmcp's part) and with the bare-wasmtime call of the same
//! component (the least any rmcp server with a fresh instance per call
//! pays); what is left above the second is corral's own.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value as Json, json};

use crate::Effort;
use crate::calls::sample;
use crate::table::{Report, Row, Value, median, p50_micros};

const ECHO_ENV: &str = "CORRAL_BENCH_ECHO_RESPONDER";

/// Whether this process was started as the echo responder.
pub fn echo_requested() -> bool {
    std::env::var_os(ECHO_ENV).is_some()
}

/// The echo responder: for each request line, a response with the same id
/// (an `initialize` result, else a one-text tool result); notifications get
/// none. It parses and serializes JSON, as any MCP server must.
pub fn echo_responder() {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { return };
        let request: Json = serde_json::from_str(&line).expect("a JSON-RPC line");
        let Some(id) = request.get("id") else {
            continue;
        };
        let result = if request["method"] == "initialize" {
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "echo", "version": "0"}})
        } else {
            json!({"content": [{"type": "text", "text": request["params"]["arguments"].to_string()}],
                   "isError": false})
        };
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(stdout, "{response}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return;
        }
    }
}

/// A spawned server and the client's ends of its stdio.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut session = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Json) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and reads lines until its response; returns it.
    fn request(&mut self, method: &str, params: Json) -> Json {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server exited"
            );
            let message: Json = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message;
            }
        }
    }

    /// Nanoseconds of each of `n` `tools/call` round trips.
    fn calls(&mut self, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let start = Instant::now();
                let response = self.request(
                    "tools/call",
                    json!({"name": "sha256", "arguments": {"text": "abc"}}),
                );
                let elapsed = start.elapsed().as_nanos() as u64;
                assert_eq!(response["result"]["isError"], false, "{response}");
                elapsed
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn corral(plugins: &Path, cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command
        .arg("serve")
        .arg("--plugins")
        .arg(plugins)
        .arg("--cache-dir")
        .arg(cache);
    command
}

/// rmcp's server with the native tool, or with the floor call of the
/// component at `wasm`.
fn rmcp_floor(wasm: Option<&Path>) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("this bench"));
    let tool = wasm.map_or(crate::rmcp_floor::NATIVE.as_ref(), Path::as_os_str);
    command.env(crate::rmcp_floor::ENV, tool);
    command
}

fn echo() -> Command {
    let mut command = Command::new(std::env::current_exe().expect("this bench"));
    command.env(ECHO_ENV, "1");
    command
}

/// `tools/call` of `sha256` over stdio: `corral serve` against the echo
/// responder and the rmcp floors, same client, same run, alternating
/// batches (31 rounds of 1 000 calls each); corral's own share is the median
/// of the rounds' differences of p50s, paired by round.
pub fn round_trip(effort: Effort, report: &mut Report) {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).expect("mkdir");
    std::fs::copy(sample("encode"), plugins.join("encode.wasm")).expect("copy");
    let cache = dir.path().join("cache");
    // The first start compiles into the cache; the measured one is warm.
    drop(Session::start(corral(&plugins, &cache)).calls(1));
    let mut server = Session::start(corral(&plugins, &cache));
    let mut responder = Session::start(echo());
    let mut native = Session::start(rmcp_floor(None));
    let mut floor = Session::start(rmcp_floor(Some(&plugins.join("encode.wasm"))));
    let mut fresh = {
        let mut command = corral(&plugins, &cache);
        command.args(["--prepared-instances", "0"]);
        Session::start(command)
    };
    // Short alternating rounds: corral's own share is the median of each
    // round's difference of p50s, so a spell of the VM that slows one
    // round slows both sides of its difference (pooled p50s moved ±15 µs
    // from run to run: BENCHMARKS.md, issue 51).
    let (rounds, batch) = (effort.pick(31, 1), effort.pick(1_000, 2));
    let mut sessions = [
        &mut server,
        &mut responder,
        &mut native,
        &mut floor,
        &mut fresh,
    ];
    for session in &mut sessions {
        session.calls(batch / 5 + 1);
    }
    let mut times: [Vec<u64>; 5] = Default::default();
    let mut round_p50s: [Vec<f64>; 5] = Default::default();
    for _ in 0..rounds {
        for ((session, times), p50s) in sessions.iter_mut().zip(&mut times).zip(&mut round_p50s) {
            let mut round = session.calls(batch);
            times.extend_from_slice(&round);
            p50s.push(p50_micros(&mut round));
        }
    }
    let [ours, bare, rmcp, floor, fresh] = times.map(|mut t| p50_micros(&mut t));
    // corral's own, paired by round: (median, lowest, highest) in µs.
    let own = |side: &[f64]| {
        let differences: Vec<f64> = side
            .iter()
            .zip(&round_p50s[3])
            .map(|(s, f)| s - f)
            .collect();
        let (low, high) = differences
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), d| (l.min(*d), h.max(*d)));
        (median(differences), low, high)
    };
    let (own_ahead, own_fresh) = (own(&round_p50s[0]), own(&round_p50s[4]));
    report.push(Row {
        figure: "MCP stdio `tools/call` of `sha256`, round trip, p50".into(),
        value: Value::Micros(ours),
        baseline: Some((
            "echo responder, same client, p50".into(),
            Value::Micros(bare),
        )),
        target: "—".into(),
        met: None,
    });
    let server_side = ours - bare;
    report.push(Row {
        figure: "… its server side (round trip minus the echo responder's)".into(),
        value: Value::Micros(server_side),
        baseline: None,
        target: "—".into(),
        met: None,
    });
    report.push(Row {
        figure: "… its floor: rmcp's stdio server whose tool is the bare-wasmtime call of the \
                 same component (fresh store and instance, typed call, drop), minus the echo \
                 responder"
            .into(),
        value: Value::Micros(floor - bare),
        baseline: None,
        target: "—".into(),
        met: None,
    });
    report.push(Row {
        figure: "… of which rmcp alone: its stdio server with a native tool that answers at once, \
                 minus the echo responder"
            .into(),
        value: Value::Micros(rmcp - bare),
        baseline: None,
        target: "—".into(),
        met: None,
    });
    let (median_ahead, low, high) = own_ahead;
    report.push(Row {
        figure: format!(
            "… and corral's own (round trip minus the floor's): validation, limits, \
             bookkeeping and its MCP handling, with instances made ahead when the \
             client's pace allows; the median of {rounds} alternating rounds' differences \
             of p50s (lowest {low:.1}, highest {high:.1} µs; of the pooled p50s: {:.1} µs)",
            ours - floor
        ),
        value: Value::Micros(median_ahead),
        baseline: None,
        target: "≤ 10 µs".into(),
        met: Some(median_ahead <= 10.0),
    });
    let (median_fresh, low, high) = own_fresh;
    report.push(Row {
        figure: format!(
            "… corral's own with every instance made when the call arrives \
             (`--prepared-instances 0`): the same plus the WASI context (lowest {low:.1}, \
             highest {high:.1} µs; of the pooled p50s: {:.1} µs)",
            fresh - floor
        ),
        value: Value::Micros(median_fresh),
        baseline: None,
        target: "—".into(),
        met: None,
    });
}

/// Milliseconds from spawning to the first `tools/list` answer, the fastest
/// of `runs`: `corral serve` on `plugins` with a warm `cache`, then the echo
/// responder.
pub fn first_list(plugins: &Path, cache: &Path, runs: usize) -> (f64, f64) {
    let time = |make: &dyn Fn() -> Command| {
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                let mut session = Session::start(make());
                session.request("tools/list", json!({}));
                start.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::INFINITY, f64::min)
    };
    (time(&|| corral(plugins, cache)), time(&echo))
}
