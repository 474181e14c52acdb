//! Pure decisions about where volumes live. A volume is bound to the zone it was made in, as a cloud
//! disk is, or (StorageClass parameter `binding: node`) to its node, as a local PV is; a node may
//! stage it only from there. No I/O here.

use crate::Error;
use crate::proto::csi::{Topology, TopologyRequirement};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The zone key every node reports and every zone-bound volume carries.
pub const ZONE_KEY: &str = "topology.kubernetes.io/zone";
/// The node key every node reports and every node-bound volume carries (the local-PV case).
pub const HOSTNAME_KEY: &str = "kubernetes.io/hostname";
/// The StorageClass parameter that binds a class's volumes to their node: `zone` (the default) or
/// `node`.
pub const BINDING_PARAMETER: &str = "binding";

/// A node's place: its name and its zone (what NodeGetInfo reports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePlace {
    pub node: String,
    pub zone: String,
}

impl NodePlace {
    /// The node's topology segment: both keys, so a class of either binding can be placed on it.
    pub fn topology(&self) -> Topology {
        Topology {
            segments: HashMap::from([
                (ZONE_KEY.to_string(), self.zone.clone()),
                (HOSTNAME_KEY.to_string(), self.node.clone()),
            ]),
        }
    }
}

impl crate::store::Record for NodePlace {
    const KIND: &'static str = "node";
    const DIR: &'static str = "nodes";
    fn id(&self) -> &str {
        &self.node
    }
}

/// What a volume is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    Zone,
    Node,
}

impl Binding {
    pub fn parse(parameters: &HashMap<String, String>) -> Result<Binding, Error> {
        match parameters.get(BINDING_PARAMETER).map(String::as_str) {
            None | Some("zone") => Ok(Binding::Zone),
            Some("node") => Ok(Binding::Node),
            Some(other) => Err(Error::InvalidArgument(format!(
                "parameter {BINDING_PARAMETER}={other:?}: want zone or node"
            ))),
        }
    }
}

/// Where one volume lives: a zone, and for a node-bound volume its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub zone: String,
    pub node: Option<String>,
}

impl Placement {
    /// The volume's accessible topology: its zone, or its node for a node-bound volume.
    pub fn topology(&self) -> Topology {
        let segment = match &self.node {
            Some(node) => (HOSTNAME_KEY.to_string(), node.clone()),
            None => (ZONE_KEY.to_string(), self.zone.clone()),
        };
        Topology {
            segments: HashMap::from([segment]),
        }
    }

    /// Whether a node there may stage (or attach) the volume.
    pub fn reachable_from(&self, place: &NodePlace) -> bool {
        self.zone == place.zone && self.node.as_ref().is_none_or(|node| *node == place.node)
    }

    /// Whether a topology segment of a request allows this placement (a key it does not name
    /// allows any value).
    fn allowed_by(&self, segments: &HashMap<String, String>) -> bool {
        let zone_ok = segments.get(ZONE_KEY).is_none_or(|zone| *zone == self.zone);
        let node_ok = match (&self.node, segments.get(HOSTNAME_KEY)) {
            (Some(node), Some(wanted)) => node == wanted,
            _ => true,
        };
        zone_ok && node_ok
    }

    /// Says where the volume lives, for messages.
    pub fn describe(&self) -> String {
        match &self.node {
            Some(node) => format!("on node {node} (zone {})", self.zone),
            None => format!("in zone {}", self.zone),
        }
    }
}

/// Where a new volume goes: the first preferred segment the requisite allows, else the first
/// requisite one (the external-provisioner puts the scheduler's node first in both), else, with no
/// requirement, the place of the node this driver runs on.
pub fn choose(
    requirement: Option<&TopologyRequirement>,
    binding: Binding,
    fallback: &NodePlace,
) -> Result<Placement, Error> {
    let (requisite, preferred) = match requirement {
        Some(r) => (r.requisite.as_slice(), r.preferred.as_slice()),
        None => (&[][..], &[][..]),
    };
    if requisite.is_empty() && preferred.is_empty() {
        return Ok(placement_at(fallback, binding));
    }
    let in_requisite = |t: &Topology| requisite.is_empty() || requisite.contains(t);
    let chosen = preferred
        .iter()
        .find(|t| in_requisite(t))
        .or_else(|| requisite.first())
        .or_else(|| preferred.first());
    let Some(segments) = chosen.map(|t| &t.segments) else {
        return Ok(placement_at(fallback, binding));
    };
    let zone = segments.get(ZONE_KEY).ok_or_else(|| {
        Error::ResourceExhausted(format!("the requested topology {segments:?} names no {ZONE_KEY}"))
    })?;
    let node = match binding {
        Binding::Zone => None,
        Binding::Node => Some(segments.get(HOSTNAME_KEY).cloned().ok_or_else(|| {
            Error::ResourceExhausted(format!(
                "a node-bound volume needs a {HOSTNAME_KEY} in its topology, not {segments:?}"
            ))
        })?),
    };
    Ok(Placement {
        zone: zone.clone(),
        node,
    })
}

fn placement_at(place: &NodePlace, binding: Binding) -> Placement {
    Placement {
        zone: place.zone.clone(),
        node: (binding == Binding::Node).then(|| place.node.clone()),
    }
}

/// Where a clone goes: where its source lives, as cloud disks clone only within their zone; refused
/// when the request's requisite topology does not allow that place. A node-bound clone of a
/// zone-bound source takes the node the request prefers, which must be in the source's zone.
pub fn clone_placement(
    requirement: Option<&TopologyRequirement>,
    binding: Binding,
    source: &Placement,
    fallback: &NodePlace,
) -> Result<Placement, Error> {
    let requisite = requirement.map(|r| r.requisite.as_slice()).unwrap_or_default();
    if !requisite.is_empty() && !requisite.iter().any(|t| source.allowed_by(&t.segments)) {
        return Err(Error::ResourceExhausted(format!(
            "a clone is made where its source lives ({}), which the requested topology does not allow",
            source.describe()
        )));
    }
    let node = match (binding, &source.node) {
        (Binding::Zone, _) => None,
        (Binding::Node, Some(node)) => Some(node.clone()),
        (Binding::Node, None) => {
            let chosen = choose(requirement, binding, fallback)?;
            if chosen.zone != source.zone {
                return Err(Error::ResourceExhausted(format!(
                    "a clone is made where its source lives ({}), not {}",
                    source.describe(),
                    chosen.describe()
                )));
            }
            chosen.node
        }
    };
    Ok(Placement {
        zone: source.zone.clone(),
        node,
    })
}

#[cfg(test)]
mod tests;
