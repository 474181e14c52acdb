//! The CSI Identity service.

use crate::driver::Driver;
use crate::proto::csi::identity_server::Identity;
use crate::proto::csi::plugin_capability::{self, service, volume_expansion};
use crate::proto::csi::{
    GetPluginCapabilitiesRequest, GetPluginCapabilitiesResponse, GetPluginInfoRequest, GetPluginInfoResponse,
    PluginCapability, ProbeRequest, ProbeResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct IdentityService {
    driver: Arc<Driver>,
}

impl IdentityService {
    pub fn new(driver: Arc<Driver>) -> Self {
        IdentityService { driver }
    }
}

#[tonic::async_trait]
impl Identity for IdentityService {
    async fn get_plugin_info(
        &self,
        _: Request<GetPluginInfoRequest>,
    ) -> Result<Response<GetPluginInfoResponse>, Status> {
        Ok(Response::new(GetPluginInfoResponse {
            name: self.driver.config.name.clone(),
            vendor_version: env!("CARGO_PKG_VERSION").to_string(),
            manifest: Default::default(),
        }))
    }

    async fn get_plugin_capabilities(
        &self,
        _: Request<GetPluginCapabilitiesRequest>,
    ) -> Result<Response<GetPluginCapabilitiesResponse>, Status> {
        let service = |kind: service::Type| PluginCapability {
            r#type: Some(plugin_capability::Type::Service(plugin_capability::Service {
                r#type: kind as i32,
            })),
        };
        // ONLINE: volumes of an offline class refuse ControllerExpandVolume with FAILED_PRECONDITION
        // while in use, which the external-resizer answers by waiting until no pod uses the claim.
        let expansion = PluginCapability {
            r#type: Some(plugin_capability::Type::VolumeExpansion(
                plugin_capability::VolumeExpansion {
                    r#type: volume_expansion::Type::Online as i32,
                },
            )),
        };
        Ok(Response::new(GetPluginCapabilitiesResponse {
            capabilities: vec![
                service(service::Type::ControllerService),
                service(service::Type::VolumeAccessibilityConstraints),
                expansion,
            ],
        }))
    }

    async fn probe(&self, _: Request<ProbeRequest>) -> Result<Response<ProbeResponse>, Status> {
        Ok(Response::new(ProbeResponse { ready: Some(true) }))
    }
}
