//! Annotation, label, finalizer and field-manager names shared by the operator, the CLI and tests.

/// API group of every Ferry resource.
pub const GROUP: &str = "ferry.dev";
/// Field manager used for every server-side apply Ferry makes.
pub const FIELD_MANAGER: &str = "ferry";
/// Finalizer Ferry puts on a VolumeResize so deletion stops at a safe point.
pub const FINALIZER: &str = "ferry.dev/cleanup";

/// Label on every object Ferry creates, holding the name of the VolumeResize that made it.
pub const LABEL_VOLUME_RESIZE: &str = "ferry.dev/volume-resize";
/// Label marking a pod as a mover pod (copies data between volumes).
pub const LABEL_MOVER: &str = "ferry.dev/mover";
/// Label on a mover pod saying which pass it makes: `warm` or `final`.
pub const LABEL_MOVER_PASS: &str = "ferry.dev/mover-pass";
/// Label on a VolumeResize `kubectl ferry drain` made: the node it moves volumes off.
pub const LABEL_DRAINED_NODE: &str = "ferry.dev/drained-node";
/// Label with the managed-by convention value.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "ferry";
/// The label the chart gives the operator's pods and the operator its leader Lease
/// (`app.kubernetes.io/name: ferry`): how `kubectl ferry` finds a running operator, in the cluster
/// or outside it.
pub const LABEL_APP_NAME: &str = "app.kubernetes.io/name";
pub const APP_NAME: &str = "ferry";

/// `ferry.dev/resize.<template-name>: "20Gi"` on a StatefulSet asks for a resize of that template.
pub const ANNOTATION_RESIZE_PREFIX: &str = "ferry.dev/resize.";
/// `ferry.dev/storage-class.<template-name>: "fast"` asks for a move to another StorageClass.
pub const ANNOTATION_STORAGE_CLASS_PREFIX: &str = "ferry.dev/storage-class.";
/// `ferry.dev/attributes-class.<template>: <VolumeAttributesClass>` on a StatefulSet: give that
/// template's volumes this attributes class (in place).
pub const ANNOTATION_ATTRIBUTES_CLASS_PREFIX: &str = "ferry.dev/attributes-class.";
/// `ferry.dev/rollback-requested: "true"` on a finished VolumeResize asks Ferry to put every copied
/// replica back on its retained old volume (`kubectl ferry rollback`).
pub const ANNOTATION_ROLLBACK_REQUESTED: &str = "ferry.dev/rollback-requested";
/// `ferry.dev/sync-claims: "true"`: grow existing PVCs to match a re-created StatefulSet's template
/// (never shrinking one); `"exact"`: their size exactly, a shrink included.
pub const ANNOTATION_SYNC_CLAIMS: &str = "ferry.dev/sync-claims";
/// Set once on a claim Ferry re-created onto a volume when its binding stalls, so the PV controller
/// syncs it again at once instead of at its next resync.
pub const ANNOTATION_BIND_NUDGE: &str = "ferry.dev/bind-nudge";
/// On a resize's backup ConfigMap: the UID of the StatefulSet it backed up, so a StatefulSet
/// re-created by someone else under the same name is told apart.
pub const ANNOTATION_BACKED_UP_UID: &str = "ferry.dev/stateful-set-uid";
/// On a StatefulSet Ferry created again (re-create or restore): the UID of the VolumeResize that did.
pub const ANNOTATION_RECREATED_BY: &str = "ferry.dev/recreated-by";
/// Label on an old volume a deleted VolumeResize still retained: Ferry no longer expires it, its
/// owner decides (`kubectl get pv -l ferry.dev/retained=true`).
pub const LABEL_RETAINED: &str = "ferry.dev/retained";
/// Annotation on such a volume: `<namespace>/<VolumeResize>` it was retained by.
pub const ANNOTATION_RETAINED_FROM: &str = "ferry.dev/retained-from";
/// On a StatefulSet: the volume claim template change an edit of the StatefulSet asked for, as a
/// JSON list of `{name, size, storageClassName?}`. Written by Ferry's admission webhook, which puts
/// the stored templates back so the API server's immutability check passes.
pub const ANNOTATION_REQUESTED_TEMPLATES: &str = "ferry.dev/requested-templates";
/// On a final mover pod: empty while it waits on standby, `go` once the replica's pod is gone and
/// its pass may begin. The mover reads it through a downward API file (`/signal/go`).
pub const ANNOTATION_FINAL_PASS: &str = "ferry.dev/final-pass";
/// The value of [`ANNOTATION_FINAL_PASS`] that starts the pass.
pub const FINAL_PASS_GO: &str = "go";
/// On a StatefulSet: the VolumeResize that serves (or served) its current request.
pub const ANNOTATION_RESIZE_BY: &str = "ferry.dev/resize-by";
/// On a StatefulSet: where its requested resize stands (`Running: …`, `Succeeded: …`, `Failed: …`).
pub const ANNOTATION_RESIZE_STATUS: &str = "ferry.dev/resize-status";
/// The seed operator's annotation, `resize-statefulset-operator/resize-<template index>: "10Gi"`.
pub const SEED_ANNOTATION_RESIZE_PREFIX: &str = "resize-statefulset-operator/resize-";
/// Label on a VolumeResize Ferry created from a trigger: `template-edit`, `annotation`,
/// `seed-annotation` or `drift`.
pub const LABEL_TRIGGER: &str = "ferry.dev/trigger";
/// Label on a VolumeResize Ferry created from a trigger: the StatefulSet it changes.
pub const LABEL_STATEFUL_SET: &str = "ferry.dev/stateful-set";
/// Label on a VolumeResize an autoscaler made: the UID of its `VolumeAutoscaler` (its `trigger`
/// label is `autoscale`). The autoscaler's record of earlier grows is rebuilt from these too.
pub const LABEL_AUTOSCALER_UID: &str = "ferry.dev/autoscaler-uid";
/// Annotations on a VolumeResize an autoscaler made: the size before and why it grew (`threshold`,
/// `inodes`, `rescue`), so the autoscaler's `lastResize` is rebuilt from it when the status that
/// recorded the grow was never written (the grow is made before its status is).
pub const ANNOTATION_AUTOSCALE_FROM: &str = "ferry.dev/autoscale-from";
pub const ANNOTATION_AUTOSCALE_REASON: &str = "ferry.dev/autoscale-reason";
/// Label on a VolumeResize a migration made: the UID of its `VolumeMigration` (its `trigger`
/// label is `migration`). The migration's progress is read back from these.
pub const LABEL_MIGRATION_UID: &str = "ferry.dev/migration-uid";
/// The seed operator's opt-in to autoresize: `"true"` gives the StatefulSet a default
/// `VolumeAutoscaler`.
pub const SEED_ANNOTATION_AUTO_SCALED: &str = "resize-statefulset-operator/auto-scaled";
/// Label on a `VolumeAutoscaler` Ferry made for the seed annotation: the StatefulSet's name.
pub const LABEL_DEFAULT_AUTOSCALER_FOR: &str = "ferry.dev/default-autoscaler-for";
