//! Features an installation may switch off, each with the permissions only it needs
//! (docs/security.md): the chart then does not grant them, and the operator never asks for them.
//! The operator runs each one unless told otherwise (`--disable-features`); the chart switches
//! off by default the four whose permissions reach across the cluster (docs/rbac.md) and passes
//! them here.

/// A feature that needs a permission the rest of Ferry does without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Reading (and marking) the Secrets an ExtendedStatefulSet references with
    /// `updateOnConfigChange`: `secrets` get/list/watch/patch.
    SecretReferences,
    /// Following (reading and marking) the ConfigMaps an ExtendedStatefulSet references with
    /// `updateOnConfigChange`: `configmaps` list/watch, and marks the chart's policy otherwise
    /// refuses on a ConfigMap that is not a backup of Ferry's own.
    ConfigMapReferences,
    /// Pointing a blue/green ExtendedStatefulSet's `updateStrategy.service` at the version that
    /// serves: `services` get/patch.
    BlueGreenService,
    /// Volume usage from the kubelet's stats summary for VolumeAutoscalers: `nodes/proxy` get.
    KubeletStats,
    /// An ExtendedStatefulSet's pre- and post-update Jobs: `batch/jobs` get/create.
    UpdateHooks,
    /// The VolumeAutoscaler controller (and the seed's `auto-scaled` opt-in, which makes one):
    /// `volumeautoscalers` and their status, `statefulsets/finalizers`, and `kubelet-stats`'s rule.
    Autoscale,
    /// The ExtendedStatefulSet controller: `extendedstatefulsets`, their status and finalizers,
    /// and the rules of `secret-references`, `config-map-references`, `blue-green-service` and
    /// `update-hooks`.
    ExtendedStatefulSets,
    /// Triggers (a StatefulSet's claim templates edited, resize annotations, drift) becoming
    /// VolumeResizes. Needs no rule of its own, but the webhook on StatefulSet updates: switched
    /// off, nothing of Ferry sits in the path of a StatefulSet edit.
    Triggers,
    /// A standby final mover's go written on its stdin as well as in its annotation, 0.1–0.2 s
    /// sooner (the replica's downtime): `pods/attach` get, create.
    DirectGo,
}

impl Feature {
    pub const ALL: [Feature; 9] = [
        Feature::SecretReferences,
        Feature::ConfigMapReferences,
        Feature::BlueGreenService,
        Feature::KubeletStats,
        Feature::UpdateHooks,
        Feature::Autoscale,
        Feature::ExtendedStatefulSets,
        Feature::Triggers,
        Feature::DirectGo,
    ];

    /// The features that only serve this one, switched off with it.
    pub fn parts(self) -> &'static [Feature] {
        match self {
            Feature::Autoscale => &[Feature::KubeletStats],
            Feature::ExtendedStatefulSets => &[
                Feature::SecretReferences,
                Feature::ConfigMapReferences,
                Feature::BlueGreenService,
                Feature::UpdateHooks,
            ],
            Feature::SecretReferences
            | Feature::ConfigMapReferences
            | Feature::BlueGreenService
            | Feature::KubeletStats
            | Feature::UpdateHooks
            | Feature::Triggers
            | Feature::DirectGo => &[],
        }
    }

    /// The name on the command line (`--disable-features`).
    pub fn flag(self) -> &'static str {
        match self {
            Feature::SecretReferences => "secret-references",
            Feature::ConfigMapReferences => "config-map-references",
            Feature::BlueGreenService => "blue-green-service",
            Feature::KubeletStats => "kubelet-stats",
            Feature::UpdateHooks => "update-hooks",
            Feature::Autoscale => "autoscale",
            Feature::ExtendedStatefulSets => "extended-stateful-sets",
            Feature::Triggers => "triggers",
            Feature::DirectGo => "direct-go",
        }
    }

    /// The chart value that switches it (`features.<value>`), for messages to users.
    pub fn chart_value(self) -> &'static str {
        match self {
            Feature::SecretReferences => "features.secretReferences",
            Feature::ConfigMapReferences => "features.configMapReferences",
            Feature::BlueGreenService => "features.blueGreenService",
            Feature::KubeletStats => "features.kubeletStats",
            Feature::UpdateHooks => "features.updateHooks",
            Feature::Autoscale => "features.autoscale",
            Feature::ExtendedStatefulSets => "features.extendedStatefulSets",
            Feature::Triggers => "features.triggers",
            Feature::DirectGo => "features.directGo",
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
    disabled: [bool; Feature::ALL.len()],
}

impl Features {
    /// Every feature but `disabled` and their parts.
    pub fn without(disabled: &[Feature]) -> Self {
        let mut features = Features::default();
        for feature in disabled {
            features.disabled[Self::index(*feature)] = true;
            for part in feature.parts() {
                features.disabled[Self::index(*part)] = true;
            }
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
            Feature::Autoscale => 3,
            Feature::ExtendedStatefulSets => 4,
            Feature::Triggers => 5,
            Feature::DirectGo => 6,
            Feature::ConfigMapReferences => 7,
            Feature::BlueGreenService => 8,
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
            error.contains(
                "secret-references, config-map-references, blue-green-service, kubelet-stats, update-hooks, autoscale, extended-stateful-sets, triggers, direct-go"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_controller_switched_off_takes_the_features_that_only_serve_it() {
        let no_autoscale = Features::without(&[Feature::Autoscale]);
        assert!(!no_autoscale.enabled(Feature::Autoscale) && !no_autoscale.enabled(Feature::KubeletStats));
        assert!(
            no_autoscale.enabled(Feature::ExtendedStatefulSets) && no_autoscale.enabled(Feature::UpdateHooks)
        );
        let no_extended = Features::without(&[Feature::ExtendedStatefulSets]);
        for part in [
            Feature::ExtendedStatefulSets,
            Feature::SecretReferences,
            Feature::ConfigMapReferences,
            Feature::BlueGreenService,
            Feature::UpdateHooks,
        ] {
            assert!(!no_extended.enabled(part), "{part:?}");
        }
        assert!(no_extended.enabled(Feature::Autoscale) && no_extended.enabled(Feature::KubeletStats));
    }
}
