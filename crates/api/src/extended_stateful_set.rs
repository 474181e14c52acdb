//! The `ExtendedStatefulSet` custom resource: a StatefulSet with scaling rules, restarts on
//! configuration change, canary updates, zones, and volume claim templates that can change (each
//! change is a VolumeResize per StatefulSet it owns).

use k8s_openapi::api::apps::v1::StatefulSetSpec;
use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An update keeps every zone where it was: zones are added or removed only at the end of the
/// list, and an ExtendedStatefulSet with zones keeps them (and one without gets none). Each zone's
/// StatefulSet is named and pinned by its position (`<name>-z<i>`); moving a zone to another
/// position, or between `<name>` and `<name>-z0`, would start replicas on new, empty claims or on
/// nodes where their volumes cannot attach.
const ZONES_KEEP_THEIR_PLACE: &str = "(has(oldSelf.spec.zones) && size(oldSelf.spec.zones) > 0) == (has(self.spec.zones) && size(self.spec.zones) > 0) && (!has(oldSelf.spec.zones) || !has(self.spec.zones) || (oldSelf.spec.zones.all(z, z in self.spec.zones ? self.spec.zones.indexOf(z) == oldSelf.spec.zones.indexOf(z) : oldSelf.spec.zones.indexOf(z) >= size(self.spec.zones)) && self.spec.zones.all(z, z in oldSelf.spec.zones || self.spec.zones.indexOf(z) >= size(oldSelf.spec.zones))))";
const ZONES_KEEP_THEIR_PLACE_MESSAGE: &str = "spec.zones: zones can only be added or removed at the end of the list, and zones cannot be turned on or off for an existing ExtendedStatefulSet: each zone's StatefulSet is named and pinned by its position (<name>-z<i>) and its replicas' volumes are there; a change that moves zones would start replicas on new, empty claims or where their volumes cannot attach. Remove zones from the end (that zone's StatefulSet is drained and deleted, its claims stay), or create a new ExtendedStatefulSet and move the data";

/// A blue/green ExtendedStatefulSet names its StatefulSets `<name>[-z<i>]-v<N>`: room for the zone
/// and a version of up to five digits within a StatefulSet name's 52 characters.
const BLUE_GREEN_NAME: &str = "!has(self.spec.updateStrategy) || !has(self.spec.updateStrategy.type) || self.spec.updateStrategy.type != 'BlueGreen' || self.metadata.name.size() <= 40";
const BLUE_GREEN_NAME_MESSAGE: &str = "with updateStrategy.type BlueGreen the name must be at most 40 characters (each version's StatefulSet is <name>[-z<i>]-v<N>)";
/// Once blue/green, always: the replicas' volumes belong to `<name>-v<N>` StatefulSets, and a
/// rolling update would start `<name>` on new, empty claims.
const BLUE_GREEN_STAYS: &str = "!has(oldSelf.spec.updateStrategy) || !has(oldSelf.spec.updateStrategy.type) || oldSelf.spec.updateStrategy.type != 'BlueGreen' || (has(self.spec.updateStrategy) && has(self.spec.updateStrategy.type) && self.spec.updateStrategy.type == 'BlueGreen')";
const BLUE_GREEN_STAYS_MESSAGE: &str = "spec.updateStrategy.type cannot change from BlueGreen: the replicas and their volumes belong to the per-version StatefulSets (<name>-v<N>), and a RollingUpdate StatefulSet <name> would start on new, empty claims";
const SERVICE_NEEDS_BLUE_GREEN: &str = "!has(self.spec.updateStrategy) || !has(self.spec.updateStrategy.service) || (has(self.spec.updateStrategy.type) && self.spec.updateStrategy.type == 'BlueGreen')";
const SERVICE_NEEDS_BLUE_GREEN_MESSAGE: &str =
    "spec.updateStrategy.service switches traffic between versions: it needs updateStrategy.type BlueGreen";

/// serde reads `updateOnEnvChange` as `updateOnConfigChange`, so an object naming both could not
/// be read: the API server refuses it.
const ALIAS_MESSAGE: &str =
    "spec.updateOnEnvChange is the quarks name of spec.updateOnConfigChange: give one of them, not both";

/// The StatefulSet to run (`template`), how many replicas and in which zones, and the rules of
/// its updates: canaries, watch times, pre- and post-update Jobs, rolling or blue/green, restarts
/// when referenced configuration changes.
#[derive(CustomResource, KubeSchema, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "ferry.dev",
    version = "v1alpha1",
    kind = "ExtendedStatefulSet",
    plural = "extendedstatefulsets",
    shortname = "ests",
    category = "ferry",
    doc = "A StatefulSet run by Ferry with extended lifecycle rules: limits on its replicas, a restart when a ConfigMap or Secret it references changes, canary or blue/green updates with pre- and post-update Jobs, one StatefulSet per zone, and volume claim templates that can change (each change is a VolumeResize of the StatefulSets it owns).",
    namespaced,
    status = "ExtendedStatefulSetStatus",
    scale = r#"{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.readyColumn"}"#,
    printcolumn = r#"{"name":"Zones","type":"string","jsonPath":".status.zonesColumn"}"#,
    printcolumn = r#"{"name":"Version","type":"integer","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = Rule::new("!has(self.spec.scaling) || !has(self.spec.scaling.min) || self.spec.replicas >= self.spec.scaling.min").message("spec.replicas is below scaling.min"),
    validation = Rule::new("!has(self.spec.scaling) || !has(self.spec.scaling.max) || self.spec.replicas <= self.spec.scaling.max").message("spec.replicas is above scaling.max"),
    validation = Rule::new("!has(self.spec.scaling) || !has(self.spec.scaling.oddOnly) || !self.spec.scaling.oddOnly || self.spec.replicas % 2 == 1").message("spec.replicas must be odd (scaling.oddOnly)"),
    validation = Rule::new("self.metadata.name.size() <= 52").message("ExtendedStatefulSet names must be at most 52 characters (its StatefulSets add a zone suffix and their pods an ordinal)"),
    validation = Rule::new(ZONES_KEEP_THEIR_PLACE).message(ZONES_KEEP_THEIR_PLACE_MESSAGE),
    validation = Rule::new("!has(self.spec.updateOnEnvChange) || !has(self.spec.updateOnConfigChange)").message(ALIAS_MESSAGE),
    validation = Rule::new(BLUE_GREEN_NAME).message(BLUE_GREEN_NAME_MESSAGE),
    validation = Rule::new(BLUE_GREEN_STAYS).message(BLUE_GREEN_STAYS_MESSAGE),
    validation = Rule::new(SERVICE_NEEDS_BLUE_GREEN).message(SERVICE_NEEDS_BLUE_GREEN_MESSAGE)
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::schema::update_on_env_change_alias)]
pub struct ExtendedStatefulSetSpec {
    /// Replicas in all zones together (the `scale` subresource sets it: `kubectl scale`, an HPA).
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,

    /// Limits on `replicas`, enforced by the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,

    /// Restart the pods when a ConfigMap or Secret their template references changes. Also
    /// accepted as `updateOnEnvChange`, its name in the quarks ExtendedStatefulSet.
    #[serde(default, alias = "updateOnEnvChange")]
    pub update_on_config_change: bool,

    /// How a template change rolls out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,

    /// A Job run before each update; if it fails the update does not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserve_unknown_object")]
    pub pre_update: Option<JobTemplateSpec>,

    /// A Job run after each update; if it fails the version is marked stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserve_unknown_object")]
    pub post_update: Option<JobTemplateSpec>,

    /// Values of `topology.kubernetes.io/zone`: one StatefulSet per zone, replicas spread evenly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(length(min = 1, max = 63)))]
    #[x_kube(merge_strategy = ListMerge::Set)]
    pub zones: Vec<String>,

    /// The StatefulSet: its labels and annotations, and its spec (`replicas` is ignored: the
    /// ExtendedStatefulSet's own `replicas` counts).
    pub template: StatefulSetTemplate,
}

fn one() -> i32 {
    1
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.min) || !has(self.max) || self.min <= self.max").message("scaling.min must not be larger than scaling.max"))]
#[x_kube(validation = Rule::new("!has(self.oddOnly) || !self.oddOnly || !has(self.min) || !has(self.max) || self.min % 2 == 1 || self.max % 2 == 1 || self.max - self.min >= 1").message("with oddOnly, scaling.min..max must hold an odd number"))]
pub struct Scaling {
    /// The fewest `replicas` the API server accepts (unset: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min: Option<i32>,
    /// The most `replicas` the API server accepts (unset: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max: Option<i32>,
    /// Only odd replica counts (a quorum that cannot tie).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub odd_only: Option<bool>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// `RollingUpdate` (default): one StatefulSet per zone, updated in place, canaries through its
    /// partition. `BlueGreen`: each version its own StatefulSet (`<name>-v<N>`) beside the running
    /// one; replicas move to it one at a time, highest ordinal first, each taking its volumes
    /// along (PV re-binding); a failed update moves them back.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UpdateType>,
    /// `BlueGreen` only: a Service of the namespace whose selector Ferry points at the new version
    /// (label `ferry.dev/version`) once its canaries are Ready, and back if the update fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub service: Option<String>,
    /// Pods of each StatefulSet updated first, then watched (default 0: no canary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub canaries: Option<i32>,
    /// How long the canaries must become and stay Ready, a duration such as `2m` (default 1m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary_watch_time: Option<String>,
    /// How long the rest must become and stay Ready (default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_watch_time: Option<String>,
    /// Update even when pods were not Ready before (the fix for a broken release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_not_ready: Option<bool>,
    /// How often a failed pre-update Job is run again before the update is given up (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub retry_count: Option<i32>,
}

/// How a new version reaches the pods.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UpdateType {
    #[default]
    RollingUpdate,
    BlueGreen,
}

impl UpdateStrategy {
    /// Whether versions run as StatefulSets of their own.
    pub fn blue_green(&self) -> bool {
        self.type_ == Some(UpdateType::BlueGreen)
    }
}

/// The StatefulSet an ExtendedStatefulSet runs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetTemplate {
    /// Labels and annotations of each StatefulSet Ferry makes from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TemplateMetadata>,
    /// An ordinary StatefulSet spec (checked by the API server when Ferry creates it).
    #[schemars(schema_with = "crate::schema::stateful_set_spec")]
    pub spec: StatefulSetSpec,
}

/// The metadata of the StatefulSets an ExtendedStatefulSet runs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TemplateMetadata {
    /// Labels of each StatefulSet (beside those Ferry adds to find its own).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations of each StatefulSet.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// What runs, written by Ferry: replicas and readiness (per zone too), the version and where its
/// update stands, the conditions, and the VolumeResizes carrying out volume changes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedStatefulSetStatus {
    /// The `metadata.generation` of the spec this status is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Replicas that exist (the `scale` subresource reads it).
    #[serde(default)]
    pub replicas: i32,
    /// Replicas whose pod is Ready, in all zones together.
    #[serde(default)]
    pub ready_replicas: i32,
    /// The pods' label selector, for the `scale` subresource (an HPA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The template version the StatefulSets run or move to (1, 2, …; a new one per change).
    #[serde(default)]
    pub version: i64,
    /// Each version and whether it runs (at least one pod of it), as in the seed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versions: BTreeMap<String, bool>,
    /// Per zone (or one entry `""` without zones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<ZoneStatus>,
    /// One per type, merged by type (another tool may add its own): `Progressing`, `Stale`,
    /// `Available`, `Invalid`, and kstatus's `Ready` (True once the current version runs on every
    /// pod), `Reconciling` (True while an update or a wait goes on) and `Stalled` (True on a stale
    /// version or a refusal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// VolumeResizes carrying out volume claim template changes, by StatefulSet.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub volume_resizes: BTreeMap<String, String>,
    /// Each volume claim template (by name) as the spec asked for it when every StatefulSet last
    /// had it so. A template that still asks for that is no request for a change: a growth made
    /// since (an autoscaler, `kubectl ferry resize`) is kept, never shrunk back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub volume_claim_templates: BTreeMap<String, RequestedVolume>,
    /// For `kubectl get`: `ready/replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_column: Option<String>,
    /// For `kubectl get`: the zones, or `-`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones_column: Option<String>,
    /// The digest of the template and referenced configuration the current version runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_digest: Option<String>,
    /// Where the update of the current version stands: `Done`, `PreUpdate`, `Canaries`, `Rest`,
    /// `PostUpdate`, `Stale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_step: Option<String>,
    /// When the current step began, for the watch times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_started_at: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Blue/green: the replica whose volumes are moving between two versions' StatefulSets now,
    /// recorded before the first change is made, so a restarted Ferry finishes the move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
    /// The step at which the current version went stale (`PreUpdate`, `Canaries`, `Rest`,
    /// `PostUpdate`), and why, while `updateStep` is `Stale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_at: Option<String>,
}

/// A volume claim template's size and class as an ExtendedStatefulSet asked for them.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestedVolume {
    /// The size asked for, a Kubernetes quantity.
    pub size: String,
    /// The StorageClass asked for (unset: the template named none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// One replica moving between versions with its volumes (blue/green).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Handover {
    /// The StatefulSet the replica leaves.
    pub from: String,
    /// The StatefulSet it joins.
    pub to: String,
    /// The replica's ordinal (the same under both StatefulSets).
    pub ordinal: i32,
    /// Each of its volumes and the claims it moves between.
    pub volumes: Vec<HandedVolume>,
}

/// One volume of a moving replica: its claim under the old StatefulSet's name, the one under the
/// new name, and what to restore on the volume once it is bound again.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandedVolume {
    /// The claim under the StatefulSet the replica leaves (`<template>-<from>-<ordinal>`).
    pub from_claim: String,
    /// The claim under the StatefulSet it joins (`<template>-<to>-<ordinal>`), bound to the same
    /// volume.
    pub to_claim: String,
    /// The PersistentVolume.
    pub volume: String,
    /// The PersistentVolume's UID when the move began: a volume of the same name but another
    /// UID is not touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_uid: Option<String>,
    /// Its reclaim policy before the move (set to Retain while its claim is re-made).
    pub reclaim_policy: String,
}

/// The StatefulSet of one zone and its replicas.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneStatus {
    /// The zone (`topology.kubernetes.io/zone`); `""` without zones.
    pub zone: String,
    /// The StatefulSet running this zone's replicas.
    pub stateful_set: String,
    /// Replicas this zone's StatefulSet is asked for (its share of `spec.replicas`).
    pub replicas: i32,
    /// Its replicas whose pod is Ready.
    pub ready_replicas: i32,
    /// Its pods on the StatefulSet's newest revision (the version being rolled out).
    pub updated_replicas: i32,
}

/// Where the update of an ExtendedStatefulSet's current version stands, as `status.updateStep`
/// names it. The status keeps the name as text, so an ExtendedStatefulSet a newer Ferry wrote a
/// step of its own into still parses; this Ferry then refuses to act on it rather than guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateStep {
    /// The version runs (or no update was ever started).
    Done,
    /// The pre-update Job runs; the StatefulSets are left as they are.
    PreUpdate,
    /// The canaries (the highest ordinals) are updating.
    Canaries,
    /// The rest of the pods are updating.
    Rest,
    /// The post-update Job runs.
    PostUpdate,
    /// The version did not make it; a new template change is the way forward.
    Stale,
}

impl UpdateStep {
    /// Every step, in the order an update goes through them.
    pub const ALL: [UpdateStep; 6] = [
        UpdateStep::PreUpdate,
        UpdateStep::Canaries,
        UpdateStep::Rest,
        UpdateStep::PostUpdate,
        UpdateStep::Done,
        UpdateStep::Stale,
    ];

    /// Its name in `status.updateStep`.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateStep::Done => "Done",
            UpdateStep::PreUpdate => "PreUpdate",
            UpdateStep::Canaries => "Canaries",
            UpdateStep::Rest => "Rest",
            UpdateStep::PostUpdate => "PostUpdate",
            UpdateStep::Stale => "Stale",
        }
    }

    /// The step `status.updateStep` names: `Done` when it names none (no update started yet), an
    /// error naming the text when this Ferry does not know it.
    pub fn from_status(text: Option<&str>) -> Result<UpdateStep, UnknownUpdateStep> {
        match text {
            None => Ok(UpdateStep::Done),
            Some(text) => UpdateStep::ALL
                .into_iter()
                .find(|step| step.as_str() == text)
                .ok_or_else(|| UnknownUpdateStep(text.to_string())),
        }
    }
}

/// A `status.updateStep` this Ferry does not know (written by a newer one, or by hand).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("status.updateStep {0:?} is not a step this Ferry knows (written by a newer Ferry?)")]
pub struct UnknownUpdateStep(pub String);

#[cfg(test)]
mod update_step_tests {
    use super::*;

    #[test]
    fn every_step_reads_back_from_its_name_and_an_unknown_one_is_an_error() {
        for step in UpdateStep::ALL {
            assert_eq!(UpdateStep::from_status(Some(step.as_str())), Ok(step));
        }
        assert_eq!(UpdateStep::from_status(None), Ok(UpdateStep::Done));
        assert_eq!(
            UpdateStep::from_status(Some("BlueGreen")),
            Err(UnknownUpdateStep("BlueGreen".into()))
        );
        assert!(UpdateStep::from_status(Some("done")).is_err(), "names are exact");
    }
}

#[cfg(test)]
mod alias_tests {
    use super::*;
    use kube::CustomResourceExt;
    use serde_json::json;

    fn spec(extra: serde_json::Value) -> serde_json::Value {
        let mut spec = json!({"template": {"spec": {"selector": {}, "template": {}}}});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        spec
    }

    #[test]
    fn update_on_env_change_reads_as_update_on_config_change() {
        let quarks: ExtendedStatefulSetSpec =
            serde_json::from_value(spec(json!({"updateOnEnvChange": true}))).unwrap();
        assert!(quarks.update_on_config_change);
        let ferry: ExtendedStatefulSetSpec =
            serde_json::from_value(spec(json!({"updateOnConfigChange": true}))).unwrap();
        assert_eq!(quarks, ferry);
        let neither: ExtendedStatefulSetSpec = serde_json::from_value(spec(json!({}))).unwrap();
        assert!(!neither.update_on_config_change);
        // Written back under Ferry's own name.
        let written = serde_json::to_value(&quarks).unwrap();
        assert_eq!(written["updateOnConfigChange"], true);
        assert!(written.get("updateOnEnvChange").is_none());
    }

    #[test]
    fn the_schema_keeps_the_alias_and_defaults_neither() {
        let crd = serde_json::to_value(ExtendedStatefulSet::crd()).unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let properties = &schema["properties"]["spec"]["properties"];
        assert_eq!(properties["updateOnEnvChange"]["type"], "boolean");
        assert_eq!(properties["updateOnConfigChange"]["type"], "boolean");
        // A default would be stored beside the alias, and both cannot be read.
        assert!(properties["updateOnConfigChange"].get("default").is_none());
        // kube's derive finds a field's merge strategy by position: the alias moves nothing.
        assert_eq!(properties["zones"]["x-kubernetes-list-type"], "set");
        assert!(
            properties["updateOnEnvChange"]
                .get("x-kubernetes-list-type")
                .is_none()
        );
        let rules = schema["x-kubernetes-validations"].as_array().unwrap();
        assert!(rules.iter().any(|rule| rule["message"] == ALIAS_MESSAGE
            && rule["rule"].as_str().unwrap().contains("updateOnEnvChange")));
    }
}
