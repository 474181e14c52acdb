//! What import works with: the systems, the object of the file a translation is about, the
//! Ferry objects it makes, and the notes.

use crate::exit::CliError;
use ferry_api::{ExtendedStatefulSet, VolumeAutoscaler, VolumeResize};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::ApiResource;
use serde_json::Value;
use std::collections::BTreeMap;

/// On every object import makes: the object of the other system it was made from.
pub const ANNOTATION_IMPORTED_FROM: &str = "ferry.dev/imported-from";

/// The systems Ferry imports from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// volmig's `VolumeResize` (`storage.maurice.fr/v1alpha1`).
    Volmig,
    /// The quarks (cf-operator, fissile) `ExtendedStatefulSet`.
    Quarks,
    /// pong1013's resize-statefulset-operator: annotations on StatefulSets.
    Pong,
    /// vshn's statefulset-resize-controller: its state annotations on StatefulSets.
    Vshn,
    /// topolvm's pvc-autoresizer: annotations on claims (and on StorageClasses).
    Autoresizer,
}

impl System {
    pub fn label(self) -> &'static str {
        match self {
            System::Volmig => "volmig",
            System::Quarks => "quarks ExtendedStatefulSet",
            System::Pong => "pong1013's resize-statefulset-operator",
            System::Vshn => "vshn's statefulset-resize-controller",
            System::Autoresizer => "topolvm's pvc-autoresizer",
        }
    }
}

/// The object of the file a translation is about, as notes name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl Source {
    pub fn of(object: &Value) -> Source {
        let text = |value: &Value| value.as_str().map(str::to_string);
        Source {
            api_version: text(&object["apiVersion"]).unwrap_or_default(),
            kind: text(&object["kind"]).unwrap_or_default(),
            namespace: text(&object["metadata"]["namespace"]),
            name: text(&object["metadata"]["name"]).unwrap_or_default(),
        }
    }

    /// `namespace/name`, or the name alone when the file gives no namespace.
    pub fn qualified_name(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Metadata of an object made from this one: `name`, its namespace, `labels`, and where it
    /// came from.
    pub fn metadata(&self, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: self.namespace.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            annotations: Some(BTreeMap::from([(
                ANNOTATION_IMPORTED_FROM.to_string(),
                format!("{} {} {}", self.api_version, self.kind, self.qualified_name()),
            )])),
            ..ObjectMeta::default()
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.kind.is_empty() {
            "(no kind)"
        } else {
            &self.kind
        };
        let name = self.qualified_name();
        let name = if name.is_empty() { "(no name)" } else { &name };
        write!(f, "{kind} {name}")?;
        if !self.api_version.is_empty() {
            write!(f, " ({})", self.api_version)?;
        }
        Ok(())
    }
}

/// An object import makes.
#[derive(Debug, Clone)]
pub enum FerryObject {
    VolumeResize(Box<VolumeResize>),
    VolumeAutoscaler(Box<VolumeAutoscaler>),
    ExtendedStatefulSet(Box<ExtendedStatefulSet>),
}

impl FerryObject {
    fn metadata(&self) -> &ObjectMeta {
        match self {
            FerryObject::VolumeResize(object) => &object.metadata,
            FerryObject::VolumeAutoscaler(object) => &object.metadata,
            FerryObject::ExtendedStatefulSet(object) => &object.metadata,
        }
    }

    pub fn name(&self) -> String {
        self.metadata().name.clone().unwrap_or_default()
    }

    pub fn namespace(&self) -> Option<String> {
        self.metadata().namespace.clone()
    }

    /// Group, version, kind and plural, for the API and for `kind.group/name` lines.
    pub fn resource(&self) -> ApiResource {
        match self {
            FerryObject::VolumeResize(_) => ApiResource::erase::<VolumeResize>(&()),
            FerryObject::VolumeAutoscaler(_) => ApiResource::erase::<VolumeAutoscaler>(&()),
            FerryObject::ExtendedStatefulSet(_) => ApiResource::erase::<ExtendedStatefulSet>(&()),
        }
    }

    /// The object as it is printed and applied: no status (import never writes one).
    pub fn to_value(&self) -> Result<Value, CliError> {
        let value = match self {
            FerryObject::VolumeResize(object) => serde_json::to_value(object),
            FerryObject::VolumeAutoscaler(object) => serde_json::to_value(object),
            FerryObject::ExtendedStatefulSet(object) => serde_json::to_value(object),
        };
        let mut value = value.map_err(|e| CliError::Failed(format!("cannot render {}: {e}", self.name())))?;
        if let Some(object) = value.as_object_mut() {
            object.remove("status");
        }
        Ok(value)
    }

    /// `volumeresize.ferry.dev/NAME`, as kubectl names objects.
    pub fn reference(&self) -> String {
        let resource = self.resource();
        format!(
            "{}.{}/{}",
            resource.kind.to_lowercase(),
            resource.group,
            self.name()
        )
    }
}

/// What one object of the file becomes: Ferry objects (none, one or several) and notes.
#[derive(Debug, Clone)]
pub struct Translation {
    pub source: Source,
    /// The system it belongs to; `None` when it is not an object Ferry imports.
    pub system: Option<System>,
    pub objects: Vec<FerryObject>,
    /// What did not carry over and why, what to do by hand, what Ferry does differently.
    pub notes: Vec<String>,
}

impl Translation {
    pub fn new(source: &Source, system: System) -> Translation {
        Translation {
            source: source.clone(),
            system: Some(system),
            objects: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
}

/// Every translation of a file, in its order.
#[derive(Debug, Clone)]
pub struct Report {
    pub file: String,
    pub translations: Vec<Translation>,
}

impl Report {
    pub fn objects(&self) -> impl Iterator<Item = &FerryObject> {
        self.translations.iter().flat_map(|t| t.objects.iter())
    }
}

/// A name for an object made from StatefulSet `stateful_set`: `<sts>-<suffix>`, the StatefulSet's
/// part cut so the whole fits `max` characters (a VolumeResize's name labels what it makes).
pub fn derived_name(stateful_set: &str, suffix: &str, max: usize) -> String {
    let room = max.saturating_sub(suffix.len() + 1);
    let stem: String = stateful_set.chars().take(room).collect();
    format!("{}-{suffix}", stem.trim_end_matches(['-', '.']))
}
