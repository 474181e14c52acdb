//! The CSI Node service: staging a volume (its loop device mounted at the staging path), publishing
//! it to pods (bind mounts), growing its file system, and the usage the kubelet reports.

use crate::Error;
use crate::disk;
use crate::driver::Driver;
use crate::mountinfo;
use crate::proto::csi::node_server::Node;
use crate::proto::csi::node_service_capability::{self, rpc};
use crate::proto::csi::volume_capability::AccessType;
use crate::proto::csi::volume_capability::access_mode::Mode;
use crate::proto::csi::*;
use crate::volume::{self, FileSystem};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct NodeService {
    driver: Arc<Driver>,
}

impl NodeService {
    pub fn new(driver: Arc<Driver>) -> Self {
        NodeService { driver }
    }
}

fn required_path(value: &str, field: &str) -> Result<PathBuf, Error> {
    if value.is_empty() {
        return Err(Error::InvalidArgument(format!("{field} is not set")));
    }
    Ok(PathBuf::from(value))
}

impl Driver {
    fn stage(&self, request: NodeStageVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        let staging = required_path(&request.staging_target_path, "staging_target_path")?;
        let capability = request
            .volume_capability
            .ok_or_else(|| Error::InvalidArgument("volume_capability is not set".into()))?;
        let file_system = volume::check_capabilities(std::slice::from_ref(&capability))?;
        let existing = self.store.require(&request.volume_id)?;
        if file_system != existing.file_system {
            return Err(Error::InvalidArgument(format!(
                "volume {} is {}, not {}",
                existing.id,
                existing.file_system.name(),
                file_system.name()
            )));
        }
        // As a cloud disk cannot be attached outside its zone, nor a local disk outside its node.
        if !existing.placement().reachable_from(&self.config.place()) {
            return Err(Error::FailedPrecondition(format!(
                "volume {} lives {}: node {} in zone {} cannot stage it",
                existing.id,
                existing.placement().describe(),
                self.config.node_id,
                self.config.zone
            )));
        }
        if self.config.attach_required
            && existing.attached_to.as_deref() != Some(self.config.node_id.as_str())
        {
            return Err(Error::FailedPrecondition(format!(
                "volume {} is not attached to {}",
                existing.id, self.config.node_id
            )));
        }
        let mut flags = match capability.access_type {
            Some(AccessType::Mount(mount)) => mount.mount_flags,
            _ => Vec::new(),
        };
        // The mutable parameter set by a VolumeAttributesClass.
        if existing.read_only {
            flags.push("ro".into());
        }
        let device = disk::attach(&self.store.image(&existing.id))?;
        disk::mount(&device, &staging, existing.file_system, &flags)?;
        // A volume restored or cloned bigger than its source holds the source's file system: it
        // grows to the volume when first staged (a no-op when it fills the device already).
        if existing.source.is_some() && existing.file_system == FileSystem::Xfs {
            disk::grow_file_system(existing.file_system, &staging)?;
        }
        tracing::info!(volume = %existing.id, %device, staging = %staging.display(), "staged");
        Ok(())
    }

    fn unstage(&self, request: NodeUnstageVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        let staging = required_path(&request.staging_target_path, "staging_target_path")?;
        let image = self.store.image(&request.volume_id);
        if let Some(device) = disk::loop_device(&image)? {
            let published: Vec<PathBuf> = mountinfo::of_source(&device)?
                .into_iter()
                .map(|m| m.mount_point)
                .filter(|point| *point != staging)
                .collect();
            if !published.is_empty() {
                return Err(Error::FailedPrecondition(format!(
                    "volume {} is still published at {published:?}",
                    request.volume_id
                )));
            }
        }
        disk::unmount(&staging)?;
        disk::detach(&image)?;
        tracing::info!(volume = %request.volume_id, "unstaged");
        Ok(())
    }

    fn publish(&self, request: NodePublishVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        let staging = required_path(&request.staging_target_path, "staging_target_path")?;
        let target = required_path(&request.target_path, "target_path")?;
        let capability = request
            .volume_capability
            .ok_or_else(|| Error::InvalidArgument("volume_capability is not set".into()))?;
        volume::check_capabilities(std::slice::from_ref(&capability))?;
        let existing = self.store.require(&request.volume_id)?;
        let staged = disk::loop_device(&self.store.image(&existing.id))?
            .zip(mountinfo::at(&staging)?)
            .is_some_and(|(device, mount)| mount.source == device);
        if !staged {
            return Err(Error::FailedPrecondition(format!(
                "volume {} is not staged at {}",
                existing.id,
                staging.display()
            )));
        }
        let reader_only = capability
            .access_mode
            .as_ref()
            .is_some_and(|m| m.mode() == Mode::SingleNodeReaderOnly);
        disk::bind(&staging, &target, request.readonly || reader_only)?;
        tracing::info!(volume = %existing.id, target = %target.display(), "published");
        Ok(())
    }

    fn unpublish(&self, request: NodeUnpublishVolumeRequest) -> Result<(), Error> {
        volume::check_id(&request.volume_id)?;
        let target = required_path(&request.target_path, "target_path")?;
        disk::unmount(&target)?;
        match std::fs::remove_dir(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(target.display(), e)),
            _ => {}
        }
        tracing::info!(volume = %request.volume_id, target = %target.display(), "unpublished");
        Ok(())
    }

    fn expand(&self, request: NodeExpandVolumeRequest) -> Result<u64, Error> {
        volume::check_id(&request.volume_id)?;
        let volume_path = required_path(&request.volume_path, "volume_path")?;
        let existing = self.store.require(&request.volume_id)?;
        let Some(device) = disk::loop_device(&self.store.image(&existing.id))? else {
            return Err(Error::FailedPrecondition(format!(
                "volume {} is not staged on this node",
                existing.id
            )));
        };
        disk::refresh_capacity(&device)?;
        let mount_point = if request.staging_target_path.is_empty() {
            volume_path
        } else {
            PathBuf::from(&request.staging_target_path)
        };
        disk::grow_file_system(existing.file_system, &mount_point)?;
        tracing::info!(volume = %existing.id, bytes = existing.capacity_bytes, "file system grown");
        Ok(existing.capacity_bytes)
    }
}

fn stats(volume_id: &str, volume_path: &Path) -> Result<NodeGetVolumeStatsResponse, Error> {
    volume::check_id(volume_id)?;
    if !volume_path.exists() {
        return Err(Error::NotFound(format!(
            "{} does not exist",
            volume_path.display()
        )));
    }
    let usage = disk::usage(volume_path)?;
    let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(NodeGetVolumeStatsResponse {
        usage: vec![
            VolumeUsage {
                available: signed(usage.available_bytes),
                total: signed(usage.total_bytes),
                used: signed(usage.used_bytes),
                unit: volume_usage::Unit::Bytes as i32,
            },
            VolumeUsage {
                available: signed(usage.free_inodes),
                total: signed(usage.total_inodes),
                used: signed(usage.used_inodes),
                unit: volume_usage::Unit::Inodes as i32,
            },
        ],
        volume_condition: Some(VolumeCondition {
            abnormal: false,
            message: "mounted".to_string(),
        }),
    })
}

#[tonic::async_trait]
impl Node for NodeService {
    async fn node_stage_volume(
        &self,
        request: Request<NodeStageVolumeRequest>,
    ) -> Result<Response<NodeStageVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call(&request.volume_id.clone(), move |d| d.stage(request))
            .await?;
        Ok(Response::new(NodeStageVolumeResponse {}))
    }

    async fn node_unstage_volume(
        &self,
        request: Request<NodeUnstageVolumeRequest>,
    ) -> Result<Response<NodeUnstageVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call(&request.volume_id.clone(), move |d| d.unstage(request))
            .await?;
        Ok(Response::new(NodeUnstageVolumeResponse {}))
    }

    async fn node_publish_volume(
        &self,
        request: Request<NodePublishVolumeRequest>,
    ) -> Result<Response<NodePublishVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call_on_volume(&request.volume_id.clone(), move |d| d.publish(request))
            .await?;
        Ok(Response::new(NodePublishVolumeResponse {}))
    }

    async fn node_unpublish_volume(
        &self,
        request: Request<NodeUnpublishVolumeRequest>,
    ) -> Result<Response<NodeUnpublishVolumeResponse>, Status> {
        let request = request.into_inner();
        self.driver
            .call_on_volume(&request.volume_id.clone(), move |d| d.unpublish(request))
            .await?;
        Ok(Response::new(NodeUnpublishVolumeResponse {}))
    }

    async fn node_get_volume_stats(
        &self,
        request: Request<NodeGetVolumeStatsRequest>,
    ) -> Result<Response<NodeGetVolumeStatsResponse>, Status> {
        // Read-only: no need to wait for calls that change volumes.
        let request = request.into_inner();
        let path = PathBuf::from(&request.volume_path);
        match tokio::task::spawn_blocking(move || stats(&request.volume_id, &path)).await {
            Ok(result) => result.map(Response::new).map_err(Status::from),
            Err(join) => Err(Status::internal(format!("the call's thread failed: {join}"))),
        }
    }

    async fn node_expand_volume(
        &self,
        request: Request<NodeExpandVolumeRequest>,
    ) -> Result<Response<NodeExpandVolumeResponse>, Status> {
        let request = request.into_inner();
        let bytes = self
            .driver
            .call(&request.volume_id.clone(), move |d| d.expand(request))
            .await?;
        Ok(Response::new(NodeExpandVolumeResponse {
            capacity_bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
        }))
    }

    async fn node_get_capabilities(
        &self,
        _: Request<NodeGetCapabilitiesRequest>,
    ) -> Result<Response<NodeGetCapabilitiesResponse>, Status> {
        let capabilities = [
            rpc::Type::StageUnstageVolume,
            rpc::Type::ExpandVolume,
            rpc::Type::GetVolumeStats,
            rpc::Type::VolumeCondition,
        ]
        .into_iter()
        .map(|kind| NodeServiceCapability {
            r#type: Some(node_service_capability::Type::Rpc(node_service_capability::Rpc {
                r#type: kind as i32,
            })),
        })
        .collect();
        Ok(Response::new(NodeGetCapabilitiesResponse { capabilities }))
    }

    async fn node_get_info(
        &self,
        _: Request<NodeGetInfoRequest>,
    ) -> Result<Response<NodeGetInfoResponse>, Status> {
        let config = &self.driver.config;
        Ok(Response::new(NodeGetInfoResponse {
            node_id: config.node_id.clone(),
            max_volumes_per_node: 0,
            accessible_topology: Some(config.place().topology()),
        }))
    }
}
