//! The CSI Controller service: creating (empty, cloned or restored), deleting, growing and (for
//! drivers that need it) attaching volumes, and taking and deleting snapshots.

use crate::Error;
use crate::disk;
use crate::driver::Driver;
use crate::placement::{self, Binding, Placement};
use crate::proto::csi::controller_server::Controller;
use crate::proto::csi::controller_service_capability::{self, rpc};
use crate::proto::csi::validate_volume_capabilities_response::Confirmed;
use crate::proto::csi::*;
use crate::volume::{self, Expansion};
use std::collections::HashMap;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct ControllerService {
    driver: Arc<Driver>,
}

impl ControllerService {
    pub fn new(driver: Arc<Driver>) -> Self {
        ControllerService { driver }
    }
}

impl Driver {
    fn create_volume(&self, request: CreateVolumeRequest) -> Result<volume::Volume, Error> {
        volume::check_id(&request.name)?;
        let wanted = volume::wanted(
            &request.parameters,
            &request.volume_capabilities,
            request.capacity_range.as_ref(),
        )?;
        let binding = Binding::parse(&request.parameters)?;
        let source = requested_source(request.volume_content_source.as_ref())?;
        let placement = self.placement_of_new(&request, binding, source.as_ref())?;
        let read_only = volume::read_only_wanted(&request.mutable_parameters)?.unwrap_or(false);
        if let Some(existing) = self.store.get(&request.name)? {
            volume::check_same(&existing, &wanted)?;
            if existing.source != source {
                return Err(Error::AlreadyExists(format!(
                    "volume {} exists, made from {:?}",
                    existing.id, existing.source
                )));
            }
            if existing.placement() != placement {
                return Err(Error::AlreadyExists(format!(
                    "volume {} exists {}",
                    existing.id,
                    existing.placement().describe()
                )));
            }
            return Ok(existing);
        }
        let image = self.store.image(&request.name);
        let in_progress = self.store.image_in_progress(&request.name);
        let bytes = match &source {
            None => {
                let bytes = volume::size_to_make(&wanted, self.max_volume_bytes()?)?;
                disk::make_image(&in_progress, bytes, wanted.file_system)?;
                bytes
            }
            Some(volume::Source::Snapshot(id)) => {
                let snapshot = self.snapshots.require(id)?;
                let bytes = volume::size_from_source(
                    &wanted,
                    self.max_volume_bytes()?,
                    snapshot.file_system,
                    snapshot.size_bytes,
                )?;
                disk::copy_image(&self.snapshots.image(id), &in_progress)?;
                disk::grow_image(&in_progress, bytes)?;
                bytes
            }
            Some(volume::Source::Volume(id)) => {
                let original = self.store.require(id)?;
                let bytes = volume::size_from_source(
                    &wanted,
                    self.max_volume_bytes()?,
                    original.file_system,
                    original.capacity_bytes,
                )?;
                self.copy_consistent(id, &in_progress)?;
                disk::grow_image(&in_progress, bytes)?;
                bytes
            }
        };
        std::fs::rename(&in_progress, &image).map_err(|e| Error::io(image.display(), e))?;
        let made = volume::Volume {
            id: request.name,
            capacity_bytes: bytes,
            file_system: wanted.file_system,
            expansion: wanted.expansion,
            zone: placement.zone,
            node: placement.node,
            parameters: wanted.parameters,
            attached_to: None,
            source,
            read_only,
        };
        self.store.put(&made)?;
        tracing::info!(volume = %made.id, bytes, source = ?made.source, "created");
        Ok(made)
    }

    /// Where a new volume goes: where the request's topology says, and a clone where its source is.
    fn placement_of_new(
        &self,
        request: &CreateVolumeRequest,
        binding: Binding,
        source: Option<&volume::Source>,
    ) -> Result<Placement, Error> {
        let requirement = request.accessibility_requirements.as_ref();
        match source {
            Some(volume::Source::Volume(id)) => {
                let original = self.store.require(id)?;
                placement::clone_placement(requirement, binding, &original.placement(), &self.config.place())
            }
            _ => placement::choose(requirement, binding, &self.config.place()),
        }
    }

    /// Copies volume `id`'s image to `target`, its file system frozen meanwhile if it is mounted
    /// (so the copy is what the file system held at one instant, like a cloud snapshot).
    fn copy_consistent(&self, id: &str, target: &std::path::Path) -> Result<(), Error> {
        let image = self.store.image(id);
        let mounted = match disk::loop_device(&image)? {
            Some(device) => crate::mountinfo::of_source(&device)?.into_iter().next(),
            None => None,
        };
        let Some(mount) = mounted else {
            return disk::copy_image(&image, target);
        };
        disk::freeze(&mount.mount_point)?;
        let copied = disk::copy_image(&image, target);
        let thawed = disk::thaw(&mount.mount_point);
        copied.and(thawed)
    }

    /// ControllerModifyVolume: records the read-only setting and applies it at once to the file
    /// system where the volume is staged (a remount of the file system itself, so the pods' bind
    /// mounts follow); a volume staged later is mounted with it.
    fn modify_volume(&self, request: ControllerModifyVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        let mut existing = self.store.require(&request.volume_id)?;
        let Some(read_only) = volume::read_only_wanted(&request.mutable_parameters)? else {
            return Ok(());
        };
        if existing.read_only != read_only {
            existing.read_only = read_only;
            self.store.put(&existing)?;
        }
        if let Some(device) = disk::loop_device(&self.store.image(&existing.id))? {
            for mount in crate::mountinfo::of_source(&device)? {
                disk::remount(&mount.mount_point, read_only)?;
            }
        }
        tracing::info!(volume = %existing.id, read_only, "modified");
        Ok(())
    }

    fn create_snapshot(&self, request: CreateSnapshotRequest) -> Result<Snapshot, Error> {
        volume::check_id(&request.name)?;
        volume::check_id(&request.source_volume_id)?;
        if let Some(existing) = self.snapshots.get(&request.name)? {
            if existing.source_volume_id != request.source_volume_id {
                return Err(Error::AlreadyExists(format!(
                    "snapshot {} exists, of volume {}",
                    existing.id, existing.source_volume_id
                )));
            }
            return Ok(snapshot_message(&existing));
        }
        let source = self.store.require(&request.source_volume_id)?;
        let in_progress = self.snapshots.image_in_progress(&request.name);
        self.copy_consistent(&source.id, &in_progress)?;
        let image = self.snapshots.image(&request.name);
        std::fs::rename(&in_progress, &image).map_err(|e| Error::io(image.display(), e))?;
        let taken = crate::snapshots::Snapshot {
            id: request.name,
            source_volume_id: source.id,
            size_bytes: source.capacity_bytes,
            file_system: source.file_system,
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
                .unwrap_or(0),
        };
        self.snapshots.put(&taken)?;
        tracing::info!(snapshot = %taken.id, volume = %taken.source_volume_id, "snapshot taken");
        Ok(snapshot_message(&taken))
    }

    fn delete_snapshot(&self, id: &str) -> Result<(), Error> {
        volume::check_id(id)?;
        self.snapshots.remove(id)?;
        tracing::info!(snapshot = %id, "snapshot deleted");
        Ok(())
    }

    fn delete_volume(&self, id: &str) -> Result<(), Error> {
        volume::check_id(id)?;
        let image = self.store.image(id);
        if let Some(node) = self.store.get(id)?.and_then(|existing| existing.attached_to) {
            return Err(Error::FailedPrecondition(format!(
                "volume {id} is still attached to {node}"
            )));
        }
        if let Some(device) = disk::loop_device(&image)? {
            return Err(Error::FailedPrecondition(format!(
                "volume {id} is still staged on the node ({device})"
            )));
        }
        self.store.remove(id)?;
        tracing::info!(volume = %id, "deleted");
        Ok(())
    }

    fn expand_volume(&self, request: ControllerExpandVolumeRequest) -> Result<u64, Error> {
        volume::check_id(&request.volume_id)?;
        let mut existing = self.store.require(&request.volume_id)?;
        let bytes = volume::size_to_grow(
            &existing,
            request.capacity_range.as_ref(),
            self.max_volume_bytes()?,
        )?;
        if bytes == existing.capacity_bytes {
            return Ok(bytes);
        }
        let image = self.store.image(&existing.id);
        // The external-resizer reads FAILED_PRECONDITION as "in use" and retries once no pod
        // uses the claim.
        if existing.expansion == Expansion::Offline
            && let Some(device) = disk::loop_device(&image)?
        {
            return Err(Error::FailedPrecondition(format!(
                "volume {} is in use ({device}): its class grows only while no pod mounts it",
                existing.id
            )));
        }
        volume::unused_expansion_fault(&existing)?;
        disk::grow_image(&image, bytes)?;
        existing.capacity_bytes = bytes;
        self.store.put(&existing)?;
        tracing::info!(volume = %existing.id, bytes, "grown (the node grows the file system)");
        Ok(bytes)
    }

    fn publish_volume(&self, request: ControllerPublishVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        self.require_attaching()?;
        let mut existing = self.store.require(&request.volume_id)?;
        let node = self.nodes.get(&request.node_id)?.ok_or_else(|| {
            Error::NotFound(format!(
                "node {} runs no instance of this driver",
                request.node_id
            ))
        })?;
        if !existing.placement().reachable_from(&node) {
            return Err(Error::FailedPrecondition(format!(
                "volume {} lives {}: node {} in zone {} cannot attach it",
                existing.id,
                existing.placement().describe(),
                node.node,
                node.zone
            )));
        }
        let capability = request
            .volume_capability
            .ok_or_else(|| Error::InvalidArgument("volume_capability is not set".into()))?;
        volume::check_capabilities(std::slice::from_ref(&capability))?;
        match &existing.attached_to {
            Some(node) if *node == request.node_id => Ok(()),
            Some(node) => Err(Error::FailedPrecondition(format!(
                "volume {} is attached to {node}",
                existing.id
            ))),
            None => {
                existing.attached_to = Some(request.node_id);
                self.store.put(&existing)?;
                tracing::info!(volume = %existing.id, "attached");
                Ok(())
            }
        }
    }

    fn unpublish_volume(&self, request: ControllerUnpublishVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        self.require_attaching()?;
        let Some(mut existing) = self.store.get(&request.volume_id)? else {
            return Ok(());
        };
        if existing.attached_to.is_none() {
            return Ok(());
        }
        if let Some(device) = disk::loop_device(&self.store.image(&existing.id))? {
            return Err(Error::FailedPrecondition(format!(
                "volume {} is still staged on the node ({device}): unstage it first",
                existing.id
            )));
        }
        existing.attached_to = None;
        self.store.put(&existing)?;
        tracing::info!(volume = %existing.id, "detached");
        Ok(())
    }

    fn require_attaching(&self) -> Result<(), Error> {
        if self.config.attach_required {
            Ok(())
        } else {
            Err(Error::Unsupported(format!(
                "{} does not attach volumes",
                self.config.name
            )))
        }
    }

    fn controller_capabilities(&self) -> Vec<ControllerServiceCapability> {
        let mut kinds = vec![
            rpc::Type::CreateDeleteVolume,
            rpc::Type::ExpandVolume,
            rpc::Type::CreateDeleteSnapshot,
            rpc::Type::CloneVolume,
            rpc::Type::ModifyVolume,
        ];
        if self.config.attach_required {
            kinds.push(rpc::Type::PublishUnpublishVolume);
        }
        kinds
            .into_iter()
            .map(|kind| ControllerServiceCapability {
                r#type: Some(controller_service_capability::Type::Rpc(
                    controller_service_capability::Rpc { r#type: kind as i32 },
                )),
            })
            .collect()
    }
}

/// The content source a CreateVolume asks for (None: an empty volume).
fn requested_source(source: Option<&VolumeContentSource>) -> Result<Option<volume::Source>, Error> {
    use volume_content_source::Type;
    let Some(kind) = source.and_then(|s| s.r#type.as_ref()) else {
        return Ok(None);
    };
    let source = match kind {
        Type::Snapshot(s) => volume::Source::Snapshot(s.snapshot_id.clone()),
        Type::Volume(v) => volume::Source::Volume(v.volume_id.clone()),
    };
    match &source {
        volume::Source::Snapshot(id) | volume::Source::Volume(id) => volume::check_id(id)?,
    }
    Ok(Some(source))
}

fn content_source_message(source: &volume::Source) -> VolumeContentSource {
    use volume_content_source::{SnapshotSource, Type, VolumeSource};
    VolumeContentSource {
        r#type: Some(match source {
            volume::Source::Snapshot(id) => Type::Snapshot(SnapshotSource {
                snapshot_id: id.clone(),
            }),
            volume::Source::Volume(id) => Type::Volume(VolumeSource {
                volume_id: id.clone(),
            }),
        }),
    }
}

fn snapshot_message(snapshot: &crate::snapshots::Snapshot) -> Snapshot {
    Snapshot {
        size_bytes: i64::try_from(snapshot.size_bytes).unwrap_or(i64::MAX),
        snapshot_id: snapshot.id.clone(),
        source_volume_id: snapshot.source_volume_id.clone(),
        creation_time: Some(prost_types::Timestamp {
            seconds: snapshot.created,
            nanos: 0,
        }),
        ready_to_use: true,
        group_snapshot_id: String::new(),
    }
}

fn volume_message(volume: &volume::Volume) -> Volume {
    Volume {
        capacity_bytes: i64::try_from(volume.capacity_bytes).unwrap_or(i64::MAX),
        volume_id: volume.id.clone(),
        volume_context: HashMap::new(),
        content_source: volume.source.as_ref().map(content_source_message),
        accessible_topology: vec![volume.placement().topology()],
    }
}

fn unimplemented<T>(what: &str) -> Result<Response<T>, Status> {
    Err(Status::unimplemented(format!(
        "{what} is not offered by this driver"
    )))
}

#[tonic::async_trait]
impl Controller for ControllerService {
    async fn create_volume(
        &self,
        request: Request<CreateVolumeRequest>,
    ) -> Result<Response<CreateVolumeResponse>, Status> {
        let request = request.into_inner();
        let made = self
            .driver
            .call(&request.name.clone(), move |d| d.create_volume(request))
            .await?;
        Ok(Response::new(CreateVolumeResponse {
            volume: Some(volume_message(&made)),
        }))
    }

    async fn delete_volume(
        &self,
        request: Request<DeleteVolumeRequest>,
    ) -> Result<Response<DeleteVolumeResponse>, Status> {
        let id = request.into_inner().volume_id;
        self.driver
            .call(&id.clone(), move |d| d.delete_volume(&id))
            .await?;
        Ok(Response::new(DeleteVolumeResponse {}))
    }

    async fn controller_publish_volume(
        &self,
        request: Request<ControllerPublishVolumeRequest>,
    ) -> Result<Response<ControllerPublishVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call(&request.volume_id.clone(), move |d| d.publish_volume(request))
            .await?;
        Ok(Response::new(ControllerPublishVolumeResponse {
            publish_context: HashMap::new(),
        }))
    }

    async fn controller_unpublish_volume(
        &self,
        request: Request<ControllerUnpublishVolumeRequest>,
    ) -> Result<Response<ControllerUnpublishVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call(&request.volume_id.clone(), move |d| d.unpublish_volume(request))
            .await?;
        Ok(Response::new(ControllerUnpublishVolumeResponse {}))
    }

    async fn validate_volume_capabilities(
        &self,
        request: Request<ValidateVolumeCapabilitiesRequest>,
    ) -> Result<Response<ValidateVolumeCapabilitiesResponse>, Status> {
        let request = request.into_inner();
        let key = request.volume_id.clone();
        let response = self
            .driver
            .call(&key, move |d| {
                volume::check_id(&request.volume_id)?;
                d.store.require(&request.volume_id)?;
                Ok(match volume::check_capabilities(&request.volume_capabilities) {
                    Ok(_) => ValidateVolumeCapabilitiesResponse {
                        confirmed: Some(Confirmed {
                            volume_context: request.volume_context,
                            volume_capabilities: request.volume_capabilities,
                            parameters: request.parameters,
                            mutable_parameters: request.mutable_parameters,
                        }),
                        message: String::new(),
                    },
                    Err(refused) => ValidateVolumeCapabilitiesResponse {
                        confirmed: None,
                        message: refused.to_string(),
                    },
                })
            })
            .await?;
        Ok(Response::new(response))
    }

    async fn list_volumes(
        &self,
        _: Request<ListVolumesRequest>,
    ) -> Result<Response<ListVolumesResponse>, Status> {
        unimplemented("ListVolumes")
    }

    async fn get_capacity(
        &self,
        _: Request<GetCapacityRequest>,
    ) -> Result<Response<GetCapacityResponse>, Status> {
        unimplemented("GetCapacity")
    }

    async fn controller_get_capabilities(
        &self,
        _: Request<ControllerGetCapabilitiesRequest>,
    ) -> Result<Response<ControllerGetCapabilitiesResponse>, Status> {
        Ok(Response::new(ControllerGetCapabilitiesResponse {
            capabilities: self.driver.controller_capabilities(),
        }))
    }

    async fn create_snapshot(
        &self,
        request: Request<CreateSnapshotRequest>,
    ) -> Result<Response<CreateSnapshotResponse>, Status> {
        let request = request.into_inner();
        let snapshot = self
            .driver
            .call(&request.source_volume_id.clone(), move |d| {
                d.create_snapshot(request)
            })
            .await?;
        Ok(Response::new(CreateSnapshotResponse {
            snapshot: Some(snapshot),
        }))
    }

    async fn delete_snapshot(
        &self,
        request: Request<DeleteSnapshotRequest>,
    ) -> Result<Response<DeleteSnapshotResponse>, Status> {
        let id = request.into_inner().snapshot_id;
        self.driver
            .call(&id.clone(), move |d| d.delete_snapshot(&id))
            .await?;
        Ok(Response::new(DeleteSnapshotResponse {}))
    }

    async fn list_snapshots(
        &self,
        _: Request<ListSnapshotsRequest>,
    ) -> Result<Response<ListSnapshotsResponse>, Status> {
        unimplemented("ListSnapshots")
    }

    async fn get_snapshot(
        &self,
        _: Request<GetSnapshotRequest>,
    ) -> Result<Response<GetSnapshotResponse>, Status> {
        unimplemented("GetSnapshot")
    }

    async fn controller_expand_volume(
        &self,
        request: Request<ControllerExpandVolumeRequest>,
    ) -> Result<Response<ControllerExpandVolumeResponse>, Status> {
        let request = request.into_inner();
        let bytes = self
            .driver
            .call(&request.volume_id.clone(), move |d| d.expand_volume(request))
            .await?;
        Ok(Response::new(ControllerExpandVolumeResponse {
            capacity_bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
            node_expansion_required: true,
        }))
    }

    async fn controller_get_volume(
        &self,
        _: Request<ControllerGetVolumeRequest>,
    ) -> Result<Response<ControllerGetVolumeResponse>, Status> {
        unimplemented("ControllerGetVolume")
    }

    async fn controller_modify_volume(
        &self,
        request: Request<ControllerModifyVolumeRequest>,
    ) -> Result<Response<ControllerModifyVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call(&request.volume_id.clone(), move |d| d.modify_volume(request))
            .await?;
        Ok(Response::new(ControllerModifyVolumeResponse {}))
    }
}
