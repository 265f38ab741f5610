//! The order and width of a load's compile step: one blocking worker per core,
//! taking the files largest first (longest-processing-time-first scheduling).
//!
//! Reading and deserializing a cache entry is work proportional to its size
//! (the Python sample's is 43 MB of the bundled samples' 63 MB). Taking the
//! largest first lets the small files and their `describe`s run beside it
//! instead of after it. One thread per file, as before, cost about the same
//! wall time on the samples (BENCHMARKS.md, start-up), but held every file's
//! bytes in memory at once; here at most one file per core is in flight.
//! A panic in `work` is caught and answered for its file alone.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

/// One file's result: its index in the load's file order, its path, and
/// what `work` answered (`None` when `work` panicked; logged here, and the
/// caller reports it for that file).
pub(super) type Done<T> = (usize, PathBuf, Option<T>);

/// Runs `work` on every file of `files` on up to `available_parallelism`
/// blocking threads, largest file first (by its size on disk; a file whose
/// size cannot be read counts as empty, and `work` reports its error).
/// Results arrive on the returned channel as each file finishes; the channel
/// closes after the last.
pub(super) fn run<T: Send + 'static>(
    files: Vec<PathBuf>,
    work: impl Fn(&PathBuf) -> T + Send + Sync + 'static,
) -> mpsc::UnboundedReceiver<Done<T>> {
    let mut queue: Vec<(u64, usize, PathBuf)> = files
        .into_iter()
        .enumerate()
        .map(|(index, path)| {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            (size, index, path)
        })
        .collect();
    // Largest first; equal sizes in file order.
    queue.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(queue.len())
        .max(1);
    let queue = Arc::new(Mutex::new(VecDeque::from(queue)));
    let work = Arc::new(work);
    let (sender, receiver) = mpsc::unbounded_channel();
    for _ in 0..workers {
        let (queue, work, sender) = (queue.clone(), work.clone(), sender.clone());
        tokio::task::spawn_blocking(move || {
            loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some((_, index, path)) = next else { break };
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&path))).ok();
                if result.is_none() {
                    tracing::error!(plugin = ?path, "a plugin compile task panicked");
                }
                if sender.send((index, path, result)).is_err() {
                    break;
                }
            }
        });
    }
    receiver
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_file_is_answered_once_largest_first_and_a_panic_is_contained() {
        let dir = tempfile::tempdir().expect("dir");
        let files: Vec<PathBuf> = [(b"a", 10), (b"b", 1000), (b"c", 100), (b"d", 500)]
            .iter()
            .map(|(name, size)| {
                let path = dir.path().join(std::str::from_utf8(*name).expect("name"));
                std::fs::write(&path, vec![0u8; *size]).expect("write");
                path
            })
            .collect();
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        let mut results = run(files, move |path: &PathBuf| {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .to_string();
            seen.lock().expect("lock").push(name.clone());
            assert_ne!(name, "c", "a panicking file");
            name
        });
        let mut answered = Vec::new();
        while let Some((index, _, result)) = results.recv().await {
            answered.push((index, result));
        }
        answered.sort();
        let expected = [(0, Some("a")), (1, Some("b")), (2, None), (3, Some("d"))];
        let expected: Vec<_> = expected
            .iter()
            .map(|(i, r)| (*i, r.map(str::to_string)))
            .collect();
        assert_eq!(answered, expected);
        // The two largest start before the smallest, whatever the width.
        let started = started.lock().expect("lock").clone();
        let position = |name: &str| started.iter().position(|n| n == name).expect("started");
        assert!(
            position("b") < position("a") && position("d") < position("a"),
            "{started:?}"
        );
    }
}
