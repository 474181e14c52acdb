//! The processes `scripts/testenv` supervises (the CSI drivers and sidecars), for tests that kill
//! them.

use crate::Error;
use crate::paths::state_dir;
use std::process::Command;

/// SIGKILLs what the supervised process `name` (e.g. `csi-block`, `csi-block-resizer`) runs now;
/// its supervisor starts it again a second later, as the kubelet restarts a container. Returns the
/// killed process IDs.
pub fn kill_supervised(name: &str) -> Result<Vec<String>, Error> {
    let pid_file = state_dir().join("pids").join(format!("{name}.pid"));
    let supervisor = std::fs::read_to_string(&pid_file).map_err(|e| Error::io(pid_file.display(), e))?;
    let supervisor = supervisor.trim();
    let children_file = format!("/proc/{supervisor}/task/{supervisor}/children");
    let children = std::fs::read_to_string(&children_file).map_err(|e| Error::io(&children_file, e))?;
    // Between two runs the supervisor sleeps a second: that `sleep` is not the process.
    let children: Vec<String> = children
        .split_whitespace()
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/comm")).is_ok_and(|comm| comm.trim() != "sleep")
        })
        .map(str::to_string)
        .collect();
    for child in &children {
        let status = Command::new("kill")
            .args(["-KILL", child])
            .status()
            .map_err(|e| Error::io("kill", e))?;
        if !status.success() {
            return Err(Error::Setup(format!(
                "kill -KILL {child} ({name}) failed: {status}"
            )));
        }
    }
    Ok(children)
}
