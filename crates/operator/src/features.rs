//! Features an installation may switch off, each with the permissions only it needs
//! (docs/security.md): the chart then does not grant them, and the operator never asks for them.

/// A feature that needs a permission the rest of Ferry does without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Reading (and marking) the Secrets an ExtendedStatefulSet references with
    /// `updateOnConfigChange`: `secrets` get/list/watch/patch.
    SecretReferences,
    /// Volume usage from the kubelet's stats summary for VolumeAutoscalers: `nodes/proxy` get.
    KubeletStats,
    /// An ExtendedStatefulSet's pre- and post-update Jobs: `batch/jobs` get/create.
    UpdateHooks,
}

impl Feature {
    pub const ALL: [Feature; 3] = [
        Feature::SecretReferences,
        Feature::KubeletStats,
        Feature::UpdateHooks,
    ];

    /// The name on the command line (`--disable-features`).
    pub fn flag(self) -> &'static str {
        match self {
            Feature::SecretReferences => "secret-references",
            Feature::KubeletStats => "kubelet-stats",
            Feature::UpdateHooks => "update-hooks",
        }
    }

    /// The chart value that switches it (`features.<value>`), for messages to users.
    pub fn chart_value(self) -> &'static str {
        match self {
            Feature::SecretReferences => "features.secretReferences",
            Feature::KubeletStats => "features.kubeletStats",
            Feature::UpdateHooks => "features.updateHooks",
        }
    }

    /// Reads a `--disable-features` item; an unknown one names the known ones.
    pub fn parse(text: &str) -> Result<Feature, String> {
        Feature::ALL
            .into_iter()
            .find(|feature| feature.flag() == text.trim())
            .ok_or_else(|| {
                let known: Vec<&str> = Feature::ALL.iter().map(|feature| feature.flag()).collect();
                format!("{text:?} is not a feature; the features are {}", known.join(", "))
            })
    }
}

/// Which features this operator uses: all, unless switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    disabled: [bool; 3],
}

impl Features {
    /// Every feature but `disabled`.
    pub fn without(disabled: &[Feature]) -> Self {
        let mut features = Features::default();
        for feature in disabled {
            features.disabled[Self::index(*feature)] = true;
        }
        features
    }

    pub fn enabled(&self, feature: Feature) -> bool {
        !self.disabled[Self::index(feature)]
    }

    fn index(feature: Feature) -> usize {
        match feature {
            Feature::SecretReferences => 0,
            Feature::KubeletStats => 1,
            Feature::UpdateHooks => 2,
        }
    }

    /// Why `feature` does nothing here: the message a user sees where it would have acted.
    pub fn switched_off(feature: Feature) -> String {
        format!(
            "this Ferry installation has {} switched off ({}: false), so it does not hold the permission this needs",
            feature.flag(),
            feature.chart_value()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_is_on_unless_switched_off() {
        let all = Features::default();
        assert!(Feature::ALL.iter().all(|feature| all.enabled(*feature)));
        let some = Features::without(&[Feature::KubeletStats]);
        assert!(!some.enabled(Feature::KubeletStats));
        assert!(some.enabled(Feature::SecretReferences) && some.enabled(Feature::UpdateHooks));
    }

    #[test]
    fn flags_read_back_and_an_unknown_one_names_the_known_ones() {
        for feature in Feature::ALL {
            assert_eq!(Feature::parse(feature.flag()), Ok(feature));
        }
        let error = Feature::parse("secrets").unwrap_err();
        assert!(
            error.contains("secret-references, kubelet-stats, update-hooks"),
            "{error}"
        );
    }
}
