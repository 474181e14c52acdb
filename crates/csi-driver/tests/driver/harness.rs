//! Starts the driver binary on a unix socket in a directory of its own, with clients for its
//! services, and removes every mount and loop device under that directory when done (and any an
//! earlier, killed run left).

use ferry_csi_driver::proto::csi::controller_client::ControllerClient;
use ferry_csi_driver::proto::csi::identity_client::IdentityClient;
use ferry_csi_driver::proto::csi::node_client::NodeClient;
use ferry_csi_driver::proto::csi::volume_capability::access_mode::Mode;
use ferry_csi_driver::proto::csi::volume_capability::{AccessMode, AccessType, MountVolume};
use ferry_csi_driver::proto::csi::*;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

pub const NODE: &str = "node-test";
pub const ZONE: &str = "zone-t";
/// Test directories start with this, so a later run finds what a killed one left.
const PREFIX: &str = "ferry-csi-test-";

pub struct Driver {
    launch: Launch,
    dir: tempfile::TempDir,
    child: Child,
    channel: Channel,
}

/// Where one volume is staged and published in a test.
pub struct VolumePaths {
    pub staging: PathBuf,
    pub target: PathBuf,
}

impl Driver {
    pub async fn start(name: &str, attach_required: bool) -> Driver {
        clean_earlier_runs();
        let dir = tempfile::Builder::new().prefix(PREFIX).tempdir().unwrap();
        let state = dir.path().join("state");
        Driver::spawned(name, attach_required, NODE, ZONE, state, dir).await
    }

    /// The same driver's instance on another node (in another zone), sharing this one's volumes,
    /// as scripts/testenv runs one per real node.
    pub async fn on_another_node(&self, node: &str, zone: &str) -> Driver {
        let dir = tempfile::Builder::new().prefix(PREFIX).tempdir().unwrap();
        let state = self.launch.state.clone();
        Driver::spawned(
            &self.launch.name,
            self.launch.attach_required,
            node,
            zone,
            state,
            dir,
        )
        .await
    }

    async fn spawned(
        name: &str,
        attach_required: bool,
        node: &str,
        zone: &str,
        state: PathBuf,
        dir: tempfile::TempDir,
    ) -> Driver {
        let launch = Launch {
            name: name.to_string(),
            attach_required,
            node: node.to_string(),
            zone: zone.to_string(),
            state,
        };
        let child = launch.spawn(dir.path());
        let channel = connect(&dir.path().join("csi.sock")).await;
        Driver {
            launch,
            dir,
            child,
            channel,
        }
    }

    /// Kills the driver (SIGKILL) and starts it again on the same state.
    pub async fn restart(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.child = self.launch.spawn(self.dir.path());
        self.channel = connect(&self.dir.path().join("csi.sock")).await;
    }

    pub fn identity(&self) -> IdentityClient<Channel> {
        IdentityClient::new(self.channel.clone())
    }

    pub fn controller(&self) -> ControllerClient<Channel> {
        ControllerClient::new(self.channel.clone())
    }

    pub fn node(&self) -> NodeClient<Channel> {
        NodeClient::new(self.channel.clone())
    }

    pub fn paths(&self, id: &str) -> VolumePaths {
        VolumePaths {
            staging: self.dir.path().join("kubelet/staging").join(id),
            target: self.dir.path().join("kubelet/pods").join(id).join("mount"),
        }
    }

    pub fn image(&self, id: &str) -> PathBuf {
        self.launch.state.join("volumes").join(format!("{id}.img"))
    }

    pub async fn create(
        &self,
        name: &str,
        bytes: i64,
        fs: &str,
        expansion: &str,
    ) -> Result<Volume, tonic::Status> {
        self.create_volume(create_request(name, bytes, fs, expansion))
            .await
    }

    /// CreateVolume (XFS, online) from a content source (a snapshot or another volume).
    pub async fn create_from(
        &self,
        name: &str,
        bytes: i64,
        source: volume_content_source::Type,
    ) -> Result<Volume, tonic::Status> {
        let request = CreateVolumeRequest {
            volume_content_source: Some(VolumeContentSource { r#type: Some(source) }),
            ..create_request(name, bytes, "xfs", "online")
        };
        self.create_volume(request).await
    }

    pub async fn create_volume(&self, request: CreateVolumeRequest) -> Result<Volume, tonic::Status> {
        let response = self.controller().create_volume(request).await?;
        Ok(response.into_inner().volume.unwrap())
    }

    pub async fn snapshot(&self, name: &str, volume: &str) -> Result<Snapshot, tonic::Status> {
        let request = CreateSnapshotRequest {
            source_volume_id: volume.to_string(),
            name: name.to_string(),
            ..Default::default()
        };
        Ok(self
            .controller()
            .create_snapshot(request)
            .await?
            .into_inner()
            .snapshot
            .unwrap())
    }

    pub async fn delete_snapshot(&self, id: &str) -> Result<(), tonic::Status> {
        let request = DeleteSnapshotRequest {
            snapshot_id: id.to_string(),
            ..Default::default()
        };
        self.controller().delete_snapshot(request).await.map(drop)
    }

    pub async fn modify(&self, id: &str, parameters: &[(&str, &str)]) -> Result<(), tonic::Status> {
        let request = ControllerModifyVolumeRequest {
            volume_id: id.to_string(),
            mutable_parameters: parameters
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        self.controller()
            .controller_modify_volume(request)
            .await
            .map(drop)
    }

    pub async fn delete(&self, id: &str) -> Result<(), tonic::Status> {
        let request = DeleteVolumeRequest {
            volume_id: id.to_string(),
            ..Default::default()
        };
        self.controller().delete_volume(request).await.map(drop)
    }

    pub async fn controller_expand(
        &self,
        id: &str,
        bytes: i64,
    ) -> Result<ControllerExpandVolumeResponse, tonic::Status> {
        let request = ControllerExpandVolumeRequest {
            volume_id: id.to_string(),
            capacity_range: Some(CapacityRange {
                required_bytes: bytes,
                limit_bytes: 0,
            }),
            ..Default::default()
        };
        Ok(self
            .controller()
            .controller_expand_volume(request)
            .await?
            .into_inner())
    }

    pub async fn attach(&self, id: &str, node: &str) -> Result<(), tonic::Status> {
        let request = ControllerPublishVolumeRequest {
            volume_id: id.to_string(),
            node_id: node.to_string(),
            volume_capability: Some(capability("xfs")),
            ..Default::default()
        };
        self.controller()
            .controller_publish_volume(request)
            .await
            .map(drop)
    }

    pub async fn detach(&self, id: &str) -> Result<(), tonic::Status> {
        let request = ControllerUnpublishVolumeRequest {
            volume_id: id.to_string(),
            node_id: self.launch.node.clone(),
            ..Default::default()
        };
        self.controller()
            .controller_unpublish_volume(request)
            .await
            .map(drop)
    }

    pub async fn stage(&self, id: &str, paths: &VolumePaths, fs: &str) -> Result<(), tonic::Status> {
        std::fs::create_dir_all(&paths.staging).unwrap();
        let request = NodeStageVolumeRequest {
            volume_id: id.to_string(),
            staging_target_path: paths.staging.display().to_string(),
            volume_capability: Some(capability(fs)),
            ..Default::default()
        };
        self.node().node_stage_volume(request).await.map(drop)
    }

    pub async fn unstage(&self, id: &str, paths: &VolumePaths) -> Result<(), tonic::Status> {
        let request = NodeUnstageVolumeRequest {
            volume_id: id.to_string(),
            staging_target_path: paths.staging.display().to_string(),
        };
        self.node().node_unstage_volume(request).await.map(drop)
    }

    pub async fn publish(&self, id: &str, paths: &VolumePaths, readonly: bool) -> Result<(), tonic::Status> {
        let request = NodePublishVolumeRequest {
            volume_id: id.to_string(),
            staging_target_path: paths.staging.display().to_string(),
            target_path: paths.target.display().to_string(),
            volume_capability: Some(capability("xfs")),
            readonly,
            ..Default::default()
        };
        self.node().node_publish_volume(request).await.map(drop)
    }

    pub async fn unpublish(&self, id: &str, paths: &VolumePaths) -> Result<(), tonic::Status> {
        let request = NodeUnpublishVolumeRequest {
            volume_id: id.to_string(),
            target_path: paths.target.display().to_string(),
        };
        self.node().node_unpublish_volume(request).await.map(drop)
    }

    pub async fn node_expand(&self, id: &str, paths: &VolumePaths) -> Result<(), tonic::Status> {
        let request = NodeExpandVolumeRequest {
            volume_id: id.to_string(),
            volume_path: paths.target.display().to_string(),
            staging_target_path: paths.staging.display().to_string(),
            ..Default::default()
        };
        self.node().node_expand_volume(request).await.map(drop)
    }

    pub async fn stats(&self, id: &str, path: &Path) -> Result<NodeGetVolumeStatsResponse, tonic::Status> {
        let request = NodeGetVolumeStatsRequest {
            volume_id: id.to_string(),
            volume_path: path.display().to_string(),
            staging_target_path: String::new(),
        };
        Ok(self.node().node_get_volume_stats(request).await?.into_inner())
    }
}

/// How an instance is started (again, after a kill).
struct Launch {
    name: String,
    attach_required: bool,
    node: String,
    zone: String,
    /// The volumes' state: in the instance's directory, or the first instance's for another
    /// node's instance.
    state: PathBuf,
}

impl Launch {
    fn spawn(&self, dir: &Path) -> Child {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ferry-csi"));
        command
            .arg("--driver-name")
            .arg(&self.name)
            .arg("--endpoint")
            .arg(dir.join("csi.sock"))
            .args(["--node-id", &self.node, "--zone", &self.zone])
            .arg("--state-dir")
            .arg(&self.state);
        if self.attach_required {
            command.arg("--attach-required");
        }
        // Its log beside its state (appended across restarts), not in the test's output.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("driver.log"))
            .unwrap();
        command.stdout(log.try_clone().unwrap()).stderr(log);
        command.spawn().unwrap()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        clean_under(self.dir.path());
    }
}

pub fn create_request(name: &str, bytes: i64, fs: &str, expansion: &str) -> CreateVolumeRequest {
    CreateVolumeRequest {
        name: name.to_string(),
        capacity_range: Some(CapacityRange {
            required_bytes: bytes,
            limit_bytes: 0,
        }),
        volume_capabilities: vec![capability(fs)],
        parameters: HashMap::from([("expansion".to_string(), expansion.to_string())]),
        ..Default::default()
    }
}

fn capability(fs: &str) -> VolumeCapability {
    VolumeCapability {
        access_type: Some(AccessType::Mount(MountVolume {
            fs_type: fs.to_string(),
            ..Default::default()
        })),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter as i32,
        }),
    }
}

async fn connect(socket: &Path) -> Channel {
    for _ in 0..200 {
        if socket.exists() {
            let socket = socket.to_path_buf();
            let connected = Endpoint::from_static("http://driver.invalid")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let socket = socket.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(socket).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await;
            if let Ok(channel) = connected {
                return channel;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the driver did not listen on {} within 10 s", socket.display());
}

pub fn code<T: std::fmt::Debug>(result: Result<T, tonic::Status>) -> tonic::Code {
    match result {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(status) => status.code(),
    }
}

pub fn df_total(path: &Path) -> i64 {
    let output = Command::new("df")
        .args(["-B1", "--output=size"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines().nth(1).unwrap().trim().parse().unwrap()
}

/// Writes `bytes` of varied data and returns their SHA-256.
pub fn write_file(path: &Path, bytes: usize) -> Vec<u8> {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut written = 0;
    while written < bytes {
        let n = chunk.len().min(bytes - written);
        file.write_all(&chunk[..n]).unwrap();
        written += n;
    }
    file.sync_all().unwrap();
    drop(file);
    checksum(path)
}

pub fn checksum(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// Writes until the file system is full; returns the OS error number that stopped it.
pub fn fill_until_full(path: &Path) -> i32 {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![7u8; 1 << 20];
    loop {
        if let Err(error) = file.write_all(&chunk).and_then(|()| file.sync_data()) {
            return error.raw_os_error().unwrap();
        }
    }
}

/// The OS error number of a full file system.
pub const ENOSPC: i32 = 28;

pub fn loop_device_of(image: &Path) -> Option<String> {
    let output = Command::new("losetup")
        .args(["-n", "-O", "NAME", "-j"])
        .arg(image)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

/// Unmounts everything under `dir` (deepest first) and detaches the loop devices over its files.
fn clean_under(dir: &Path) {
    let prefix = format!("{}/", dir.display());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<String> = ferry_csi_driver::mountinfo::parse(&mounts)
        .into_iter()
        .map(|m| m.mount_point.display().to_string())
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by(|a, b| b.cmp(a));
    for point in points {
        let _ = Command::new("umount").arg("-l").arg(point).status();
    }
    let output = Command::new("losetup")
        .args(["-n", "-O", "NAME,BACK-FILE"])
        .output()
        .unwrap();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let mut fields = line.split_whitespace();
        if let (Some(device), Some(file)) = (fields.next(), fields.next())
            && file.starts_with(&prefix)
        {
            let _ = Command::new("losetup").arg("-d").arg(device).status();
        }
    }
}

/// A killed test run leaves its directory, mounts and loop devices behind: remove those of
/// directories older than ten minutes (no test here runs that long).
fn clean_earlier_runs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(600));
        if name.to_string_lossy().starts_with(PREFIX) && old {
            clean_under(&entry.path());
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
