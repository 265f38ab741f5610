//! Crash safety (issue 29, campaign 4): a child process appends to an audit
//! log and grants standing approvals as fast as it can, and is killed with
//! SIGKILL at a random moment, again and again. After each kill, everything
//! the child reported done must be in the files, the approvals file must
//! open, every audit line but a torn last one must parse, and no temporary
//! file may be left behind.
//!
//! The child reports each step on stdout only after it returned: `audited N`
//! after `AuditLog::append` (which syncs), `granted N` after
//! `StandingApprovals::grant` (which renames into place).

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use corral::{AuditLog, StandingApprovals};

/// The audit log's file name in the campaign directory.
pub const AUDIT_FILE: &str = "audit.jsonl";
/// The standing approvals' file name in the campaign directory.
pub const APPROVALS_FILE: &str = "approvals.json";

/// The sha256 the child grants its approval number `n` of round `round`
/// for: distinct per grant, so each is a new entry.
fn sha_of(round: usize, n: usize) -> String {
    format!("{round:032x}{n:032x}")
}

/// The environment variable that makes a process the kill loop's child:
/// `DIR,ROUND`.
pub const CHILD_ENV: &str = "CORRAL_CRASH_CHILD";

/// The directory and round in [`CHILD_ENV`], when this process is a child.
pub fn child_request() -> Option<(std::path::PathBuf, usize)> {
    let value = std::env::var(CHILD_ENV).ok()?;
    let (dir, round) = value.rsplit_once(',')?;
    Some((dir.into(), round.parse().ok()?))
}

/// The child's side: opens both files in `dir` and appends and grants until
/// killed. Round `round` tags its records.
///
/// # Panics
/// When a file cannot be opened: the parent sees the child exit, not be
/// killed, and reports it.
pub fn child(dir: &Path, round: usize) -> ! {
    let audit = AuditLog::open(dir.join(AUDIT_FILE)).expect("the audit log opens");
    let approvals =
        StandingApprovals::file(dir.join(APPROVALS_FILE)).expect("the approvals file opens");
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").expect("stdout");
    out.flush().expect("stdout");
    for n in 0.. {
        let record = serde_json::json!({
            "event": "crash-test", "round": round, "n": n,
            // Long enough that a kill can land inside a write.
            "padding": "x".repeat(512),
        });
        audit.append(&record).expect("append");
        writeln!(out, "audited {n}").expect("stdout");
        out.flush().expect("stdout");
        approvals
            .grant(&format!("tool_{round}_{n}"), "crash", &sha_of(round, n))
            .expect("grant");
        writeln!(out, "granted {n}").expect("stdout");
        out.flush().expect("stdout");
    }
    unreachable!("the loop ends only when the child is killed")
}

/// What the kill loop came to.
#[derive(Debug, Default)]
pub struct CrashTally {
    /// Rounds run (children killed).
    pub rounds: usize,
    /// Audit records the children reported written.
    pub audited: usize,
    /// Approvals the children reported granted.
    pub granted: usize,
    /// Torn audit lines in the log at the end (each a kill inside a write),
    /// every one isolated on its own line.
    pub torn_lines: usize,
    /// Everything that went wrong, with its round.
    pub defects: Vec<String>,
}

impl std::fmt::Display for CrashTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} SIGKILLs: {} audit records and {} standing approvals acknowledged, \
             {} torn audit lines left isolated, {} defects",
            self.rounds,
            self.audited,
            self.granted,
            self.torn_lines,
            self.defects.len()
        )?;
        for defect in self.defects.iter().take(10) {
            write!(f, "\n  {defect}")?;
        }
        Ok(())
    }
}

/// Runs `rounds` rounds in `dir`: `spawn(dir, round)` starts a child (which
/// must run [`child`]), it is killed with SIGKILL at a moment between 0 and
/// `max_wait` after it is ready, and the files are checked.
pub fn kill_loop(
    dir: &Path,
    rounds: usize,
    max_wait: Duration,
    spawn: impl Fn(&Path, usize) -> Command,
) -> CrashTally {
    let mut tally = CrashTally::default();
    // Everything acknowledged so far, by any round.
    let mut audited = BTreeSet::<(usize, usize)>::new();
    let mut granted = BTreeSet::<(usize, usize)>::new();
    // A cheap, seeded spread of kill moments (no need for a random crate).
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..rounds {
        let mut child = spawn(dir, round)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        // A test harness may print before the child's own lines.
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|line| line.ends_with("ready"));
        if !ready {
            let status = child.wait();
            tally.defects.push(format!(
                "round {round}: the child exited before it was ready: {status:?}"
            ));
            break;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let wait = max_wait.mul_f64((state % 1000) as f64 / 1000.0);
        // Not a wait for anything: the kill's moment is the experiment, any
        // point of the child's loop.
        std::thread::sleep(wait);
        let _ = child.kill();
        let status = child.wait().expect("wait");
        if status.code().is_some() {
            tally.defects.push(format!(
                "round {round}: the child exited by itself: {status}"
            ));
        }
        for line in lines.map_while(Result::ok) {
            let mut words = line.split_whitespace();
            let (what, n) = (words.next(), words.next().and_then(|n| n.parse().ok()));
            match (what, n) {
                (Some("audited"), Some(n)) => {
                    audited.insert((round, n));
                    tally.audited += 1;
                }
                (Some("granted"), Some(n)) => {
                    granted.insert((round, n));
                    tally.granted += 1;
                }
                _ => {}
            }
        }
        tally.rounds += 1;
        check(dir, round, &audited, &granted, &mut tally);
    }
    tally
}

/// The checks after round `round`'s kill.
fn check(
    dir: &Path,
    round: usize,
    audited: &BTreeSet<(usize, usize)>,
    granted: &BTreeSet<(usize, usize)>,
    tally: &mut CrashTally,
) {
    // The approvals file opens and holds every acknowledged grant.
    match StandingApprovals::file(dir.join(APPROVALS_FILE)) {
        Err(err) => tally.defects.push(format!("round {round}: {err}")),
        Ok(approvals) => {
            let lost = granted
                .iter()
                .filter(|&&(r, n)| !approvals.allows(&format!("tool_{r}_{n}"), &sha_of(r, n)))
                .count();
            if lost > 0 {
                tally
                    .defects
                    .push(format!("round {round}: {lost} acknowledged grants lost"));
            }
        }
    }
    // Every audit line parses but a torn last one, and every acknowledged
    // record is there.
    let text = std::fs::read(dir.join(AUDIT_FILE)).unwrap_or_default();
    let mut found = BTreeSet::new();
    // A torn line that swallowed the next record would lose that record:
    // the check below counts it.
    tally.torn_lines = 0;
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(v) => {
                if let (Some(r), Some(n)) = (v["round"].as_u64(), v["n"].as_u64()) {
                    found.insert((r as usize, n as usize));
                }
            }
            Err(_) => tally.torn_lines += 1,
        }
    }
    let lost = audited.difference(&found).count();
    if lost > 0 {
        tally.defects.push(format!(
            "round {round}: {lost} acknowledged audit records lost"
        ));
    }
    // No temporary file left behind.
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default();
    if !leftovers.is_empty() {
        tally.defects.push(format!(
            "round {round}: temporary files left behind: {leftovers:?}"
        ));
    }
}
