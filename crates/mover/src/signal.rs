//! The go of a final pass: a mover started on standby (its volumes mounted while the replica still
//! serves) waits until a file is non-empty. In a pod that file is a downward API file showing an
//! annotation the operator sets once the replica's pod is gone; the kubelet rewrites it in place.

use std::path::Path;
use std::time::Duration;

/// How often the file is read: the go's latency on top of the kubelet's, for a read of a small
/// file on a tmpfs a hundred times a second.
const POLL: Duration = Duration::from_millis(10);

/// Returns once `path` exists with non-blank content. A file not there yet (the kubelet writes
/// the volume before the container starts, but outside a pod it may come later) is waited for too.
pub fn wait_for_go(path: &Path) {
    loop {
        if let Ok(content) = std::fs::read(path)
            && content.iter().any(|b| !b.is_ascii_whitespace())
        {
            return;
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

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
                std::fs::write(&path, "go").unwrap();
                Instant::now()
            })
        };
        let started = Instant::now();
        wait_for_go(&path);
        let returned = Instant::now();
        let written = writer.join().unwrap();
        assert!(returned >= written, "returned before the go was written");
        assert!(returned.duration_since(started) >= Duration::from_millis(400));
    }
}
