//! What Ferry needs of a cluster, by Kubernetes version: the operator checks the API server's version
//! at start and says, in its log, what a cluster outside the supported range lacks and what that
//! breaks (it still starts: a user may have backported features, and each missing one fails the
//! step that needs it with the API server's own message).

/// The oldest and newest Kubernetes minors Ferry is tested on (docs/supported-versions.md).
pub const OLDEST_SUPPORTED_MINOR: u32 = 34;
pub const NEWEST_TESTED_MINOR: u32 = 37;

/// A Kubernetes feature Ferry relies on, the minor where it became generally available, and what
/// goes wrong without it.
struct Feature {
    name: &'static str,
    since_minor: u32,
    without: &'static str,
}

const FEATURES: [Feature; 5] = [
    Feature {
        name: "CEL validation rules in CRDs (x-kubernetes-validations)",
        since_minor: 29,
        without: "Ferry's CRDs are refused or their rules ignored: bad VolumeResizes, autoscalers and ExtendedStatefulSet scaling are not refused at admission",
    },
    Feature {
        name: "admission webhook matchConditions",
        since_minor: 30,
        without: "the webhook configurations are refused: template edits are not turned into VolumeResizes",
    },
    Feature {
        name: "StatefulSet spec.ordinals.start",
        since_minor: 31,
        without: "StatefulSets whose ordinals do not start at 0 are planned wrongly",
    },
    Feature {
        name: "StatefulSet persistentVolumeClaimRetentionPolicy",
        since_minor: 32,
        without: "whenScaled/whenDeleted cannot be honoured; claims follow the cluster's default",
    },
    Feature {
        name: "recovery from failed volume expansion (a PVC request lowered again)",
        since_minor: 34,
        without: "an in-place grow the driver cannot finish cannot be rolled back to the old request",
    },
];

/// One thing the operator says about the cluster at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Older than the oldest supported minor.
    TooOld { found: String },
    /// Newer than the newest tested minor (expected to work; not tested).
    Untested { found: String },
    /// A feature Ferry needs that this version lacks.
    Lacks {
        feature: &'static str,
        since: String,
        consequence: &'static str,
    },
    /// The version could not be read (e.g. a vendor's `minor: "34+"` is read, `"x"` is not).
    Unknown { major: String, minor: String },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::TooOld { found } => write!(
                f,
                "Kubernetes {found} is older than the oldest version Ferry supports (v1.{OLDEST_SUPPORTED_MINOR})"
            ),
            Finding::Untested { found } => write!(
                f,
                "Kubernetes {found} is newer than the newest version Ferry is tested on (v1.{NEWEST_TESTED_MINOR})"
            ),
            Finding::Lacks {
                feature,
                since,
                consequence,
            } => write!(
                f,
                "this cluster lacks {feature} (Kubernetes {since}): {consequence}"
            ),
            Finding::Unknown { major, minor } => write!(
                f,
                "cannot read the Kubernetes version (major {major:?}, minor {minor:?}); assuming it is supported"
            ),
        }
    }
}

/// The API server's `major`/`minor` (as `/version` gives them, e.g. "1" and "34+") as numbers.
pub fn parse_version(major: &str, minor: &str) -> Option<(u32, u32)> {
    let digits = |text: &str| -> Option<u32> {
        let number: String = text.chars().take_while(char::is_ascii_digit).collect();
        number.parse().ok()
    };
    Some((digits(major)?, digits(minor)?))
}

/// What to say about a cluster of this version; nothing for a supported, tested one.
pub fn check(major: &str, minor: &str) -> Vec<Finding> {
    let Some((major_number, minor_number)) = parse_version(major, minor) else {
        return vec![Finding::Unknown {
            major: major.to_string(),
            minor: minor.to_string(),
        }];
    };
    let found = format!("v{major_number}.{minor_number}");
    if major_number != 1 {
        return vec![Finding::Untested { found }];
    }
    let mut findings = Vec::new();
    if minor_number < OLDEST_SUPPORTED_MINOR {
        findings.push(Finding::TooOld { found: found.clone() });
    }
    if minor_number > NEWEST_TESTED_MINOR {
        findings.push(Finding::Untested { found });
    }
    findings.extend(
        FEATURES
            .iter()
            .filter(|feature| minor_number < feature.since_minor)
            .map(|feature| Finding::Lacks {
                feature: feature.name,
                since: format!("v1.{}", feature.since_minor),
                consequence: feature.without,
            }),
    );
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_versions_need_no_word() {
        for minor in OLDEST_SUPPORTED_MINOR..=NEWEST_TESTED_MINOR {
            assert_eq!(check("1", &minor.to_string()), vec![]);
        }
        assert_eq!(check("1", "35+"), vec![]);
    }

    #[test]
    fn an_old_cluster_is_told_what_it_lacks_and_what_that_breaks() {
        let findings = check("1", "30");
        assert_eq!(
            findings[0],
            Finding::TooOld {
                found: "v1.30".into()
            }
        );
        let lacking: Vec<String> = findings[1..].iter().map(ToString::to_string).collect();
        assert_eq!(lacking.len(), 3, "{lacking:?}");
        assert!(lacking[0].contains("ordinals.start") && lacking[0].contains("v1.31"));
        assert!(lacking[1].contains("persistentVolumeClaimRetentionPolicy"));
        assert!(
            check("1", "28")
                .iter()
                .any(|f| f.to_string().contains("CEL validation"))
        );
    }

    #[test]
    fn newer_and_unreadable_versions_are_said_but_not_refused() {
        assert_eq!(
            check("1", "38"),
            vec![Finding::Untested {
                found: "v1.38".into()
            }]
        );
        assert!(matches!(check("1", "x")[0], Finding::Unknown { .. }));
        assert_eq!(parse_version("1", "36+"), Some((1, 36)));
    }
}
