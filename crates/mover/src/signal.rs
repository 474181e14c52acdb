//! The go of a final pass: a mover started on standby (its volumes mounted while the replica still
//! serves) waits until a file is non-empty. In a pod that file is a downward API file showing an
//! annotation the operator sets once the replica's pod is gone; the kubelet rewrites it in place.
//!
//! The operator may also give the go as a line on the mover's stdin (through an attach stream it
//! opened while the replica served), which skips the kubelet's delivery of the annotation. Only a
//! line whose SHA-256 is the digest the mover was started with counts: the key is known to the
//! operator alone, so no one else allowed to attach can start the pass. Anything else on stdin, and
//! its end (the stream dropped with the operator), starts nothing.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// How often the file is read: the go's latency on top of the kubelet's, for a read of a small
/// file on a tmpfs a hundred times a second.
const POLL: Duration = Duration::from_millis(10);

/// The longest stdin line read at once: a key is 64 hex digits; anything longer is read in pieces
/// (none of which matches) rather than held whole.
const MAX_LINE: u64 = 256;

/// Which signal started the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoBy {
    /// The file (the downward API annotation).
    File,
    /// The key on stdin.
    Line,
}

impl GoBy {
    pub fn as_str(self) -> &'static str {
        match self {
            GoBy::File => "file",
            GoBy::Line => "line",
        }
    }
}

/// Returns once `path` exists with non-blank content, or once `lines` (if given) sends the line
/// whose SHA-256 is `key_digest` (lowercase hex). A file not there yet (the kubelet writes the
/// volume before the container starts, but outside a pod it may come later) is waited for too.
pub fn wait_for_go<R>(path: &Path, lines: Option<(R, String)>) -> GoBy
where
    R: BufRead + Send + 'static,
{
    let mut go = Go::new(path, lines);
    loop {
        if let Some(by) = go.wait(Duration::from_secs(3600)) {
            return by;
        }
    }
}

/// The go, waited for a while at a time (a standby works between waits). Its stdin reader, if
/// any, starts once and keeps reading across waits.
pub struct Go {
    path: PathBuf,
    keyed: Option<Receiver<()>>,
}

impl Go {
    /// Listens for the go of [`wait_for_go`]: `path`'s content, or the keyed line of `lines`.
    pub fn new<R>(path: &Path, lines: Option<(R, String)>) -> Self
    where
        R: BufRead + Send + 'static,
    {
        Go {
            path: path.to_path_buf(),
            keyed: lines.map(|(reader, digest)| listen(reader, digest)),
        }
    }

    /// Waits at most `at_most` for the go (the file and the line are looked for at least once);
    /// `None` if it did not come.
    pub fn wait(&mut self, at_most: Duration) -> Option<GoBy> {
        let deadline = Instant::now().checked_add(at_most);
        loop {
            if let Ok(content) = std::fs::read(&self.path)
                && content.iter().any(|b| !b.is_ascii_whitespace())
            {
                return Some(GoBy::File);
            }
            let step = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()).min(POLL),
                None => POLL,
            };
            if step.is_zero() {
                let keyed = self.keyed.as_ref().is_some_and(|keyed| keyed.try_recv().is_ok());
                return keyed.then_some(GoBy::Line);
            }
            match &self.keyed {
                Some(keyed) => match keyed.recv_timeout(step) {
                    Ok(()) => return Some(GoBy::Line),
                    Err(RecvTimeoutError::Timeout) => {}
                    // The reader ended without the key: the file alone is left.
                    Err(RecvTimeoutError::Disconnected) => self.keyed = None,
                },
                None => std::thread::sleep(step),
            }
        }
    }
}

/// Reads `reader` line by line on a thread of its own; sends once a line's SHA-256 is `digest`.
fn listen<R: BufRead + Send + 'static>(reader: R, digest: String) -> Receiver<()> {
    let (found, receiver) = channel();
    std::thread::spawn(move || {
        let mut reader = reader;
        loop {
            let mut line = Vec::new();
            match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if is_key(line.trim_ascii(), &digest) {
                let _ = found.send(());
                return;
            }
        }
    });
    receiver
}

/// Whether `line`'s SHA-256 is `digest` (hex, either case).
fn is_key(line: &[u8], digest: &str) -> bool {
    let hash = Sha256::digest(line);
    let hex: String = hash.iter().map(|byte| format!("{byte:02x}")).collect();
    !line.is_empty() && hex.eq_ignore_ascii_case(digest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const KEY: &str = "k3y";

    fn digest_of(key: &str) -> String {
        Sha256::digest(key.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    #[test]
    fn returns_only_once_the_file_has_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go");
        std::fs::write(&path, "").unwrap();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                std::fs::write(&path, "  \n").unwrap();
                std::thread::sleep(Duration::from_millis(200));
                // Taken before the write: the waiter may see "go" before this thread runs again.
                let writing = Instant::now();
                std::fs::write(&path, "go").unwrap();
                writing
            })
        };
        let started = Instant::now();
        let by = wait_for_go::<Cursor<Vec<u8>>>(&path, None);
        let returned = Instant::now();
        let written = writer.join().unwrap();
        assert_eq!(by, GoBy::File);
        assert!(returned >= written, "returned before the go was being written");
        assert!(returned.duration_since(started) >= Duration::from_millis(400));
    }

    #[test]
    fn the_key_on_a_line_starts_the_pass_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go");
        std::fs::write(&path, "").unwrap();
        let lines = Cursor::new(format!("go\n{KEY}x\n\n{KEY}\n").into_bytes());
        let by = wait_for_go(&path, Some((lines, digest_of(KEY))));
        assert_eq!(by, GoBy::Line);
    }

    /// Other lines, an overlong one, and the stream's end (the operator gone) start nothing: only
    /// the file does, later.
    #[test]
    fn other_lines_and_the_end_of_the_stream_start_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go");
        std::fs::write(&path, "").unwrap();
        let overlong = KEY.repeat(200);
        let lines = Cursor::new(format!("go\n{overlong}\n{}\n", digest_of(KEY)).into_bytes());
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                // Taken before the write: the waiter may see the file and return before this
                // thread runs again (that raced under a loaded CI run).
                let go_written = Instant::now();
                std::fs::write(&path, "go").unwrap();
                go_written
            })
        };
        let by = wait_for_go(&path, Some((lines, digest_of(KEY))));
        let returned = Instant::now();
        assert_eq!(by, GoBy::File, "a line that is not the key started the pass");
        assert!(
            returned >= writer.join().unwrap(),
            "returned before the file's go"
        );
    }

    #[test]
    fn only_the_key_whose_digest_was_given_matches() {
        assert!(is_key(KEY.as_bytes(), &digest_of(KEY)));
        assert!(is_key(KEY.as_bytes(), &digest_of(KEY).to_uppercase()));
        assert!(!is_key(b"other", &digest_of(KEY)));
        assert!(!is_key(b"", &digest_of("")), "an empty line is never a key");
    }

    /// A wait with no go returns after its time, and the key sent meanwhile is the next one's go.
    #[test]
    fn a_wait_ends_without_a_go_and_the_next_one_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go");
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut go = Go::new(&path, Some((std::io::BufReader::new(reader), digest_of(KEY))));
        let started = Instant::now();
        assert_eq!(go.wait(Duration::from_millis(100)), None);
        assert!(started.elapsed() >= Duration::from_millis(100));
        std::io::Write::write_all(&mut writer, format!("{KEY}\n").as_bytes()).unwrap();
        assert_eq!(go.wait(Duration::from_secs(10)), Some(GoBy::Line));
        std::fs::write(&path, "go").unwrap();
        assert_eq!(
            go.wait(Duration::ZERO),
            Some(GoBy::File),
            "the file is read at least once"
        );
    }

    /// A wait of no time at all still takes a key already sent (interim passes that follow each
    /// other at once wait for the go that long).
    #[test]
    fn a_wait_of_no_time_sees_a_key_already_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("go");
        let (reader, mut writer) = std::io::pipe().unwrap();
        let mut go = Go::new(&path, Some((std::io::BufReader::new(reader), digest_of(KEY))));
        assert_eq!(go.wait(Duration::ZERO), None);
        std::io::Write::write_all(&mut writer, format!("{KEY}\n").as_bytes()).unwrap();
        // The reader thread takes the line in its own time: waits of no time, until one sees it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while go.wait(Duration::ZERO).is_none() {
            assert!(Instant::now() < deadline, "no wait of no time saw the key");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
