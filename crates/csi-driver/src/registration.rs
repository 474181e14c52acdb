//! The kubelet's plugin registration (what node-driver-registrar does): the kubelet finds this
//! socket in its plugin registry directory, asks for the driver's name and CSI endpoint, registers
//! the driver (so `CSINode` lists it) and says whether that worked.

use crate::proto::registration::registration_server::Registration;
use crate::proto::registration::{InfoRequest, PluginInfo, RegistrationStatus, RegistrationStatusResponse};
use std::path::Path;
use tonic::{Request, Response, Status};

/// The kubelet's name for CSI plugins in its registration API.
const CSI_PLUGIN: &str = "CSIPlugin";
/// The CSI versions the kubelet may speak with this driver.
const SUPPORTED_VERSIONS: [&str; 1] = ["1.0.0"];

pub struct RegistrationService {
    name: String,
    endpoint: String,
}

impl RegistrationService {
    pub fn new(name: &str, endpoint: &Path) -> Self {
        RegistrationService {
            name: name.to_string(),
            endpoint: endpoint.display().to_string(),
        }
    }
}

#[tonic::async_trait]
impl Registration for RegistrationService {
    async fn get_info(&self, _: Request<InfoRequest>) -> Result<Response<PluginInfo>, Status> {
        Ok(Response::new(PluginInfo {
            r#type: CSI_PLUGIN.to_string(),
            name: self.name.clone(),
            endpoint: self.endpoint.clone(),
            supported_versions: SUPPORTED_VERSIONS.iter().map(|v| v.to_string()).collect(),
        }))
    }

    async fn notify_registration_status(
        &self,
        request: Request<RegistrationStatus>,
    ) -> Result<Response<RegistrationStatusResponse>, Status> {
        let status = request.into_inner();
        if status.plugin_registered {
            tracing::info!(driver = %self.name, "registered with the kubelet");
        } else {
            tracing::error!(driver = %self.name, error = %status.error, "the kubelet refused the registration");
        }
        Ok(Response::new(RegistrationStatusResponse {}))
    }
}
