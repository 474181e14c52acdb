//! Every name Ferry gives or looks up, built here and only here: the planner carries them in its
//! actions, so the operator never parses a name back (a prefix match would take template `data`
//! for `data-log`).

/// Which pass of a copy a mover pod makes; its name says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// While the replica still runs; changes during it are fine.
    Warm,
    /// With the replica stopped; must end exact and verified.
    Final,
}

/// Short, stable suffix from a VolumeResize's UID: names never collide with those of an older
/// VolumeResize of the same name.
pub fn uid_suffix(uid: &str) -> String {
    uid.chars().take(8).collect()
}

/// The claim the StatefulSet controller makes for `template` and `ordinal`.
pub fn claim(template: &str, stateful_set: &str, ordinal: i32) -> String {
    format!("{template}-{stateful_set}-{ordinal}")
}

/// A StatefulSet's pod for `ordinal`.
pub fn pod(stateful_set: &str, ordinal: i32) -> String {
    format!("{stateful_set}-{ordinal}")
}

/// The temporary claim a copy of `claim` goes to.
pub fn temp_claim(claim: &str, suffix: &str) -> String {
    format!("{claim}-ferry-{suffix}")
}

/// Whether `name` is one of Ferry's temporary claims for a copy of `claim` (of any resize), read
/// back where only the name is known: a wake-up from a claim's change.
pub fn is_temp_claim_of(name: &str, claim: &str) -> bool {
    name.strip_prefix(claim)
        .is_some_and(|rest| rest.starts_with("-ferry-"))
}

/// The pod measuring the data in use on `claim`.
pub fn usage_pod(claim: &str, suffix: &str) -> String {
    format!("{claim}-ferry-{suffix}-usage")
}

/// The mover pod making one pass of the copy of `claim`.
pub fn mover(claim: &str, suffix: &str, pass: Pass) -> String {
    let pass = match pass {
        Pass::Warm => "warm",
        Pass::Final => "final",
    };
    format!("{claim}-ferry-{suffix}-{pass}")
}

/// The mover pod serving `claim` (read only) to the movers of another node (a copy to another
/// node); its per-copy key is in the Secret of the same name.
pub fn serving_mover(claim: &str, suffix: &str) -> String {
    format!("{claim}-ferry-{suffix}-serve")
}

/// The Secret with the key of one serving mover of `claim`'s copy: a new one each time the copy
/// starts again (`restarts`), so a serving mover never finds the key of the one before it, which
/// the garbage collector deletes with that pod.
pub fn serving_key(claim: &str, suffix: &str, restarts: u32) -> String {
    format!("{claim}-ferry-{suffix}-key-{restarts}")
}

/// The port a serving mover listens on.
pub const SERVING_PORT: u16 = 7443;

/// Where movers reach serving mover `ip` (an IPv6 address in brackets).
pub fn serving_address(ip: &str) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{SERVING_PORT}")
    } else {
        format!("{ip}:{SERVING_PORT}")
    }
}

/// The ConfigMap holding a VolumeResize's StatefulSet backup.
pub fn backup(resize: &str) -> String {
    format!("ferry-{resize}-backup")
}

/// The Lease that holds a StatefulSet for one resize at a time, kept in the operator's own
/// namespace: `ferry-hold.<namespace>.<statefulset>` (a namespace has no dots, so no two
/// StatefulSets share one). Past the 253 characters of a name, the end is a digest of the rest.
pub fn hold(namespace: &str, stateful_set: &str) -> String {
    const MAX: usize = 253;
    within(&format!("ferry-hold.{namespace}.{stateful_set}"), MAX)
}

/// `name` if it has at most `max` characters, else its start and a digest of all of it (8 bytes
/// in hex) in `max`.
fn within(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    use sha2::Digest;
    let digest = hex_digest(sha2::Sha256::new_with_prefix(name.as_bytes()), 8);
    // (Names are ASCII: any byte index is a character boundary.)
    format!("{}-{digest}", name[..max - 17].trim_end_matches(['.', '-']))
}

/// `value` as a label value: itself up to 63 characters, else its start and a digest of it.
pub fn label_value(value: &str) -> String {
    within(value, 63)
}

/// The first `bytes` bytes of a finished SHA-256, in hex: short digests for names and annotations.
pub fn hex_digest(hasher: sha2::Sha256, bytes: usize) -> String {
    use sha2::Digest;
    hasher
        .finalize()
        .iter()
        .take(bytes)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The ordinal in `name` if it is `<prefix>-<digits>` (a pod `<sts>-<n>` with prefix `<sts>`, a
/// claim `<template>-<sts>-<n>` with prefix `<template>-<sts>`).
pub fn ordinal_after(name: &str, prefix: &str) -> Option<i32> {
    let ordinal = name.strip_prefix(prefix)?.strip_prefix('-')?;
    if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    ordinal.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_follow_the_prefix_and_are_digits_only() {
        assert_eq!(ordinal_after("db-12", "db"), Some(12));
        assert_eq!(ordinal_after("data-db-0", "data-db"), Some(0));
        assert_eq!(ordinal_after("db-x-1", "db"), None);
        assert_eq!(ordinal_after("db-", "db"), None);
        assert_eq!(ordinal_after("db-+1", "db"), None);
        assert_eq!(ordinal_after("dbx-1", "db"), None);
    }

    #[test]
    fn names_of_a_row() {
        let suffix = uid_suffix("0123456789abcdef");
        assert_eq!(suffix, "01234567");
        let claim = claim("data-log", "db", 2);
        assert_eq!(claim, "data-log-db-2");
        assert_eq!(temp_claim(&claim, &suffix), "data-log-db-2-ferry-01234567");
        assert!(is_temp_claim_of(&temp_claim(&claim, &suffix), &claim));
        assert!(!is_temp_claim_of("data-log-db-20-ferry-01234567", &claim));
        assert!(!is_temp_claim_of(&claim, &claim));
        assert_eq!(usage_pod(&claim, &suffix), "data-log-db-2-ferry-01234567-usage");
        assert_eq!(
            mover(&claim, &suffix, Pass::Final),
            "data-log-db-2-ferry-01234567-final"
        );
        assert_eq!(pod("db", 2), "db-2");
        assert_eq!(backup("grow"), "ferry-grow-backup");
        assert_eq!(hold("team", "db"), "ferry-hold.team.db");
    }

    #[test]
    fn a_hold_name_stays_a_valid_name_and_unique_however_long_its_parts() {
        let long = "s".repeat(253);
        let (one, other) = (hold("team", &long), hold("team2", &long));
        assert!(one.len() <= 253 && other.len() <= 253, "{one}");
        assert_ne!(one, other);
        assert_ne!(hold("team", &long), hold("team", &"s".repeat(252)));
    }
}
