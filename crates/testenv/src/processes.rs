//! The processes `scripts/testenv` supervises (the CSI drivers and sidecars, the real node's
//! real nodes' kubelets) and those in the real nodes' pods, for tests that kill them.

use crate::Error;
use crate::paths::state_dir;
use std::process::Command;

/// The name `scripts/testenv` supervises a real node's kubelet under (`kubelet` for the first,
/// `kubelet-N` for the Nth), for [`kill_supervised`]; None for a node that is not real.
pub fn kubelet_process(node: &str) -> Option<String> {
    let index = crate::REAL_NODES.iter().position(|real| *real == node)?;
    Some(match index {
        0 => "kubelet".to_string(),
        _ => format!("kubelet-{}", index + 1),
    })
}

/// SIGKILLs what the supervised process `name` (e.g. `csi-block`, `csi-block-resizer`, `kubelet`) runs now;
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
        if !sigkill(child)? {
            return Err(Error::Setup(format!("kill -KILL {child} ({name}) failed")));
        }
    }
    Ok(children)
}

/// `kill -KILL pid`; whether it was delivered.
fn sigkill(pid: &str) -> Result<bool, Error> {
    let status = Command::new("kill")
        .args(["-KILL", pid])
        .status()
        .map_err(|e| Error::io("kill", e))?;
    Ok(status.success())
}

/// SIGKILLs the processes running `program` in the containers of pod `pod` on the real node (as
/// the kernel's OOM killer would). Returns the killed process IDs (none when the program is not
/// running there yet).
pub fn kill_in_pod(pod: &str, program: &str) -> Result<Vec<String>, Error> {
    let mut killed = Vec::new();
    for pid in running_in_pod(pod, program)? {
        if sigkill(&pid)? {
            killed.push(pid);
        }
    }
    Ok(killed)
}

/// The processes running `program` as the containers of pod `pod` on a real node: found by the
/// `HOSTNAME` the runtime gives every container of a pod and by the program's name, so no other
/// test's pods are matched. Only a container's own process counts (PID 1 of its PID namespace): an
/// exec probe running the same program beside it (the standby mover's `ferry-mover ready`) is
/// not one, and would come and go between two looks.
pub fn running_in_pod(pod: &str, program: &str) -> Result<Vec<String>, Error> {
    let hostname = format!("HOSTNAME={pod}");
    let mut found = Vec::new();
    let entries = std::fs::read_dir("/proc").map_err(|e| Error::io("/proc", e))?;
    for entry in entries.flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // (Processes that end meanwhile, or that are not ours to read, are simply not matches.)
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let runs_program = cmdline
            .split(|b| *b == 0)
            .next()
            .map(|arg0| String::from_utf8_lossy(arg0).rsplit('/').next() == Some(program))
            .unwrap_or(false);
        if !runs_program {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|var| var == hostname.as_bytes()) && is_containers_own(&pid) {
            found.push(pid);
        }
    }
    Ok(found)
}

/// Whether process `pid` is PID 1 of its innermost PID namespace (the last `NSpid` of its status),
/// as a container's own process is and a process exec'd into the container is not.
fn is_containers_own(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("NSpid:"))
                .and_then(|pids| pids.split_whitespace().last().map(|own| own == "1"))
        })
        .unwrap_or(false)
}
