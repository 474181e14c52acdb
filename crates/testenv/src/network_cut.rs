//! A network fault between two real nodes: each node's route to the other's pod range becomes a
//! blackhole, so packets between their pods are dropped both ways (the nodes still reach the API
//! server, and pods on other nodes are untouched). Dropping the [`Cut`] puts the routes back.

use crate::REAL_NODES;
use crate::error::Error;
use std::process::Command;

/// A cut in force until dropped.
pub struct Cut {
    /// (node network namespace, the route it had) to put back.
    routes: Vec<(String, String)>,
}

/// A real node's network namespace and its pods' address range.
fn node_network(node: &str) -> Result<(String, String), Error> {
    let index = REAL_NODES
        .iter()
        .position(|n| *n == node)
        .ok_or_else(|| Error::Setup(format!("{node} is not a real node")))?;
    let netns = if index == 0 {
        "ferry-node".to_string()
    } else {
        format!("ferry-node{}", index + 1)
    };
    Ok((netns, format!("10.251.{index}.0/24")))
}

/// Runs `ip route ARGS` in network namespace `netns`; its output.
fn ip_route(netns: &str, args: &[&str]) -> Result<String, Error> {
    let output = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{netns}"))
        .args(["ip", "route"])
        .args(args)
        .output()
        .map_err(|e| Error::io("nsenter", e))?;
    if !output.status.success() {
        return Err(Error::Setup(format!(
            "ip route {} in {netns}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Cuts the pod network between real nodes `a` and `b`.
pub fn cut_between(a: &str, b: &str) -> Result<Cut, Error> {
    let (a_netns, a_pods) = node_network(a)?;
    let (b_netns, b_pods) = node_network(b)?;
    let mut cut = Cut { routes: Vec::new() };
    for (netns, other) in [(a_netns, b_pods), (b_netns, a_pods)] {
        let route = ip_route(&netns, &["show", &other])?;
        if route.is_empty() {
            return Err(Error::Setup(format!("{netns} has no route to {other}")));
        }
        ip_route(&netns, &["replace", "blackhole", &other])?;
        cut.routes.push((netns, route));
    }
    Ok(cut)
}

impl Drop for Cut {
    fn drop(&mut self) {
        for (netns, route) in &self.routes {
            let args: Vec<&str> = std::iter::once("replace")
                .chain(route.split_whitespace())
                .collect();
            if let Err(error) = ip_route(netns, &args) {
                eprintln!("could not restore the route {route} in {netns}: {error}");
            }
        }
    }
}
