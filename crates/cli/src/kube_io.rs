//! Kubernetes I/O: connecting like kubectl does, and turning API errors into errors a user can act
//! on (with the exit codes of [`crate::exit`]).

use crate::args::GlobalArgs;
use crate::exit::CliError;
use crate::render::{self, EventLine};
use crate::request::Template;
use ferry_api::VolumeResize;
use ferry_api::listed::{self, ListedResize};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Resource};
use std::time::Duration;

/// A connected client and the namespace the command works in.
#[derive(Clone)]
pub struct Cluster {
    pub client: Client,
    pub namespace: String,
    /// The API server URL, for error messages.
    pub server: String,
}

const INSTALL_HINT: &str = "install it with: ferry crd | kubectl apply -f -";

/// Connects with `--kubeconfig`/`--context` (else `$KUBECONFIG`, `~/.kube/config`, in-cluster).
pub async fn connect(global: &GlobalArgs) -> Result<Cluster, CliError> {
    let options = KubeConfigOptions {
        context: global.context.clone(),
        cluster: None,
        user: None,
    };
    let config: Result<Config, String> = match &global.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
                CliError::Unreachable(format!("cannot read kubeconfig {}: {e}", path.display()))
            })?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| e.to_string())
        }
        None if global.context.is_some() => {
            Config::from_kubeconfig(&options).await.map_err(|e| e.to_string())
        }
        None => Config::infer().await.map_err(|e| e.to_string()),
    };
    let mut config = config.map_err(|e| {
        CliError::Unreachable(format!(
            "no usable cluster configuration: {e} (use --kubeconfig, --context or $KUBECONFIG)"
        ))
    })?;
    config.connect_timeout = Some(Duration::from_secs(5));
    // 0 waits as long as it takes, as kubectl's.
    config.read_timeout = match global.request_timeout {
        None => Some(Duration::from_secs(30)),
        Some(timeout) => (!timeout.is_zero()).then_some(timeout),
    };
    config.write_timeout = config.read_timeout;
    if let Some(user) = &global.as_user {
        config.auth_info.impersonate = Some(user.clone());
        config.auth_info.impersonate_groups =
            (!global.as_groups.is_empty()).then(|| global.as_groups.clone());
    }
    let namespace = global
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config)
        .map_err(|e| CliError::Unreachable(format!("cannot set up a client for {server}: {e}")))?;
    Ok(Cluster {
        client,
        namespace,
        server,
    })
}

/// What the command was doing, for error messages: e.g. ("create", "volumeresizes.ferry.dev").
#[derive(Debug, Clone, Copy)]
pub struct Action<'a> {
    pub verb: &'a str,
    pub resource: &'a str,
    pub name: Option<&'a str>,
}

impl<'a> Action<'a> {
    pub fn new(verb: &'a str, resource: &'a str) -> Self {
        Action {
            verb,
            resource,
            name: None,
        }
    }
    pub fn named(verb: &'a str, resource: &'a str, name: &'a str) -> Self {
        Action {
            verb,
            resource,
            name: Some(name),
        }
    }
}

/// Maps a kube error to a user-facing error, without extra requests (see [`Cluster::explain`]).
pub fn classify(error: &kube::Error, action: Action<'_>, namespace: &str, server: &str) -> CliError {
    match error {
        kube::Error::Api(status) => match status.code {
            401 => CliError::Unreachable(format!(
                "the cluster at {server} rejected the credentials (401 Unauthorized): {}",
                status.message
            )),
            403 => CliError::Forbidden(format!(
                "forbidden: you may not {} {} in namespace {namespace:?}; ask for RBAC permission \
                 (server said: {})",
                action.verb, action.resource, status.message
            )),
            404 => match action.name {
                Some(name) => CliError::NotFound(format!(
                    "{} {name:?} not found in namespace {namespace:?}",
                    action.resource
                )),
                None => CliError::NotFound(format!("{}: {}", action.resource, status.message)),
            },
            409 => CliError::Failed(format!("conflict: {}", status.message)),
            400 | 422 => CliError::Usage(format!("the API server refused the request: {}", status.message)),
            _ => CliError::Failed(format!(
                "cannot {} {}: {} ({})",
                action.verb, action.resource, status.message, status.code
            )),
        },
        other => CliError::Unreachable(format!(
            "cannot reach the Kubernetes API server at {server}: {other} (check --kubeconfig, \
             --context and that the cluster is running)"
        )),
    }
}

/// The VolumeResize if this kubectl-ferry can read it, else the error naming it and what did not parse.
pub fn readable(listed: ListedResize) -> Result<VolumeResize, CliError> {
    match listed {
        ListedResize::Readable(resize) => Ok(*resize),
        ListedResize::Unreadable(unreadable) => {
            Err(CliError::Unreadable(render::unreadable_message(&unreadable)))
        }
    }
}

impl Cluster {
    /// Whether the API server calls Ferry's validating webhook in this namespace: a server-side
    /// dry run of a VolumeResize for a StatefulSet that does not exist (nothing kept), which only
    /// that webhook refuses (`ferry_engine::webhook_probe`).
    pub async fn webhook_reach(&self) -> ferry_engine::webhook_probe::Reach {
        use ferry_engine::webhook_probe::{self, PROBE_STATEFUL_SET, ProbeAnswer};
        let resizes: Api<VolumeResize> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = kube::api::PostParams {
            dry_run: true,
            ..Default::default()
        };
        let answer = match resizes
            .create(
                &params,
                &webhook_probe::probe_resize(&self.namespace, PROBE_STATEFUL_SET),
            )
            .await
        {
            Ok(_) => ProbeAnswer::Accepted,
            Err(kube::Error::Api(status)) => ProbeAnswer::Refused(status.message),
            Err(error) => ProbeAnswer::Failed(error.to_string()),
        };
        webhook_probe::reach(&answer, PROBE_STATEFUL_SET)
    }

    /// The Ferry operators in every namespace: their pods and leader Leases (both labelled
    /// `app.kubernetes.io/name=ferry`), or why neither can be listed.
    pub async fn operators(&self) -> crate::version::Operators {
        use crate::version::Operators;
        match (self.operator_pods().await, self.operator_leases().await) {
            (Err(pods), Err(leases)) => Operators::Unknown(format!(
                "cannot list pods in every namespace: {pods}; nor leases: {leases}"
            )),
            (pods, leases) => Operators::Found {
                pods: pods.unwrap_or_default(),
                leases: leases.unwrap_or_default(),
            },
        }
    }

    async fn operator_pods(&self) -> Result<Vec<crate::version::OperatorPod>, kube::Error> {
        use crate::version::{OPERATOR_SELECTOR, OperatorPod, pod_version};
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::all(self.client.clone());
        let list = pods
            .list(&ListParams::default().labels(OPERATOR_SELECTOR))
            .await?;
        Ok(list
            .items
            .iter()
            .map(|pod| OperatorPod {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                version: pod_version(
                    pod.metadata.labels.as_ref(),
                    pod.spec
                        .as_ref()
                        .and_then(|spec| spec.containers.first())
                        .and_then(|container| container.image.as_deref()),
                ),
                ready: pod
                    .status
                    .iter()
                    .flat_map(|status| status.conditions.iter().flatten())
                    .any(|c| c.type_ == "Ready" && c.status == "True"),
            })
            .collect())
    }

    async fn operator_leases(&self) -> Result<Vec<crate::version::OperatorLease>, kube::Error> {
        use crate::version::{OPERATOR_SELECTOR, OperatorLease};
        let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::all(self.client.clone());
        let list = leases
            .list(&ListParams::default().labels(OPERATOR_SELECTOR))
            .await?;
        let now = jiff::Timestamp::now();
        Ok(list
            .items
            .iter()
            .map(|lease| {
                let spec = lease.spec.clone().unwrap_or_default();
                OperatorLease {
                    namespace: lease.metadata.namespace.clone().unwrap_or_default(),
                    name: lease.metadata.name.clone().unwrap_or_default(),
                    holder: spec.holder_identity.filter(|holder| !holder.is_empty()),
                    renewed_seconds_ago: spec
                        .renew_time
                        .map(|renewed| now.duration_since(renewed.0).as_secs()),
                    lease_seconds: spec.lease_duration_seconds,
                }
            })
            .collect())
    }

    /// For creating and changing VolumeResizes. Reading goes through [`Cluster::raw_resizes`], so one
    /// written under another Ferry's CRD is told apart instead of failing (see [`ferry_api::listed`]).
    pub fn resizes(&self) -> Api<VolumeResize> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The VolumeResizes of the namespace (or of all with `all_namespaces`) as raw objects.
    pub fn raw_resizes(&self, all_namespaces: bool) -> Api<DynamicObject> {
        let resource = listed::api_resource();
        if all_namespaces {
            Api::all_with(self.client.clone(), &resource)
        } else {
            Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
        }
    }

    /// Every VolumeResize of the namespace (or of all), each readable by this kubectl-ferry or not.
    pub async fn list_resizes(&self, all_namespaces: bool) -> Result<Vec<ListedResize>, CliError> {
        match self
            .raw_resizes(all_namespaces)
            .list(&ListParams::default())
            .await
        {
            Ok(list) => Ok(list.items.into_iter().map(ListedResize::from_object).collect()),
            Err(error) => Err(self.explain(error, Action::new("list", RESIZES)).await),
        }
    }

    /// Maps an error; a 404 while working on VolumeResizes checks whether the CRD is installed.
    pub async fn explain(&self, error: kube::Error, action: Action<'_>) -> CliError {
        let is_404 = matches!(&error, kube::Error::Api(status) if status.code == 404);
        if is_404
            && action.resource == RESIZES
            && let Err(missing) = self.require_crd().await
        {
            return missing;
        }
        classify(&error, action, &self.namespace, &self.server)
    }

    /// Fails with install instructions when the VolumeResize CRD is not served.
    pub async fn require_crd(&self) -> Result<(), CliError> {
        match self.client.list_api_group_resources("ferry.dev/v1alpha1").await {
            Ok(list) if list.resources.iter().any(|r| r.name == "volumeresizes") => Ok(()),
            Ok(_) => Err(crd_missing()),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(crd_missing()),
            Err(error) => Err(classify(
                &error,
                Action::new("get", "API group ferry.dev/v1alpha1"),
                &self.namespace,
                &self.server,
            )),
        }
    }

    /// The VolumeResize named, readable or not (NotFound when it does not exist).
    pub async fn get_listed(&self, name: &str) -> Result<ListedResize, CliError> {
        match self.raw_resizes(false).get(name).await {
            Ok(object) => Ok(ListedResize::from_object(object)),
            Err(error) => Err(self.explain(error, Action::named("get", RESIZES, name)).await),
        }
    }

    /// The VolumeResize named: NotFound when it does not exist, Unreadable (naming it and the parse
    /// error) when this kubectl-ferry cannot read it.
    pub async fn get_resize(&self, name: &str) -> Result<VolumeResize, CliError> {
        readable(self.get_listed(name).await?)
    }

    /// As [`Cluster::get_resize`], with None when it does not exist.
    pub async fn get_resize_opt(&self, name: &str) -> Result<Option<VolumeResize>, CliError> {
        match self.raw_resizes(false).get_opt(name).await {
            Ok(Some(object)) => readable(ListedResize::from_object(object)).map(Some),
            Ok(None) => Ok(None),
            Err(error) => Err(self.explain(error, Action::named("get", RESIZES, name)).await),
        }
    }

    /// The StatefulSet's volume claim templates (NotFound when it does not exist).
    pub async fn templates(&self, stateful_set: &str) -> Result<Vec<Template>, CliError> {
        let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &self.namespace);
        let sts = api.get_opt(stateful_set).await.map_err(|e| {
            classify(
                &e,
                Action::named("get", "statefulsets.apps", stateful_set),
                &self.namespace,
                &self.server,
            )
        })?;
        let Some(sts) = sts else {
            let names = api
                .list(&ListParams::default())
                .await
                .map(|list| {
                    list.items
                        .into_iter()
                        .filter_map(|s| s.metadata.name)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let available = if names.is_empty() {
                "there are none".to_string()
            } else {
                format!("there are: {}", names.join(", "))
            };
            return Err(CliError::NotFound(format!(
                "StatefulSet {stateful_set:?} not found in namespace {:?} ({available})",
                self.namespace
            )));
        };
        Ok(sts
            .spec
            .map(|spec| spec.volume_claim_templates.unwrap_or_default())
            .unwrap_or_default()
            .into_iter()
            .map(|claim| Template {
                name: claim.metadata.name.unwrap_or_default(),
                size: ferry_api::quantity::requested_storage(claim.spec.as_ref()).map(|q| q.0.clone()),
                storage_class: claim.spec.and_then(|s| s.storage_class_name),
            })
            .collect())
    }

    /// The one StatefulSet that the resource `kind`/`name` controls (its controller owner
    /// reference), for `kubectl ferry resize prometheus/k8s`.
    pub async fn owned_stateful_set(&self, kind: &str, name: &str) -> Result<String, CliError> {
        let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &self.namespace);
        let sets = api.list(&ListParams::default()).await.map_err(|e| {
            classify(
                &e,
                Action::new("list", "statefulsets.apps"),
                &self.namespace,
                &self.server,
            )
        })?;
        let owned: Vec<String> = sets
            .items
            .into_iter()
            .filter(|sts| {
                sts.metadata.owner_references.iter().flatten().any(|owner| {
                    owner.controller == Some(true)
                        && owner.name == name
                        && crate::request::kind_matches(kind, &owner.kind, &owner.api_version)
                })
            })
            .filter_map(|sts| sts.metadata.name)
            .collect();
        match owned.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(CliError::NotFound(format!(
                "no StatefulSet in namespace {:?} is controlled by {kind}/{name}",
                self.namespace
            ))),
            several => Err(CliError::Usage(format!(
                "{kind}/{name} controls {} StatefulSets ({}); name one",
                several.len(),
                several.join(", ")
            ))),
        }
    }

    /// Checks a StorageClass exists. Being unable to read StorageClasses (forbidden) is not an
    /// error here: the operator checks again.
    pub async fn check_storage_class(&self, name: &str) -> Result<(), CliError> {
        let api: Api<StorageClass> = Api::all(self.client.clone());
        match api.get_opt(name).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                let names = api
                    .list(&ListParams::default())
                    .await
                    .map(|l| {
                        l.items
                            .into_iter()
                            .filter_map(|c| c.metadata.name)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                Err(CliError::NotFound(format!(
                    "StorageClass {name:?} does not exist (there are: {})",
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                )))
            }
            Err(kube::Error::Api(status)) if status.code == 403 => Ok(()),
            Err(error) => Err(classify(
                &error,
                Action::named("get", "storageclasses.storage.k8s.io", name),
                &self.namespace,
                &self.server,
            )),
        }
    }

    /// Events about the VolumeResize, oldest first. Unreadable Events are shown as none.
    pub async fn events(&self, name: &str, now: jiff::Timestamp) -> Vec<EventLine> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().fields(&format!(
            "involvedObject.kind=VolumeResize,involvedObject.name={name}"
        ));
        let Ok(list) = api.list(&params).await else {
            return Vec::new();
        };
        let mut events: Vec<(Option<jiff::Timestamp>, EventLine)> = list
            .items
            .into_iter()
            .map(|event| {
                let when = event
                    .last_timestamp
                    .as_ref()
                    .map(|t| t.0)
                    .or_else(|| event.event_time.as_ref().map(|t| t.0))
                    .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0));
                let series = event.series.as_ref().and_then(|s| s.count);
                (
                    when,
                    EventLine {
                        type_: event.type_.unwrap_or_default(),
                        reason: event.reason.unwrap_or_default(),
                        age_seconds: when.map(|t| crate::format::seconds_between(t, now)),
                        count: series.or(event.count).unwrap_or(1),
                        message: event.message.unwrap_or_default(),
                    },
                )
            })
            .collect();
        events.sort_by_key(|(when, _)| *when);
        events.into_iter().map(|(_, line)| line).collect()
    }
}

pub const RESIZES: &str = "volumeresizes.ferry.dev";

fn crd_missing() -> CliError {
    CliError::CrdMissing(format!(
        "the VolumeResize CRD (volumeresizes.ferry.dev) is not installed in this cluster; {INSTALL_HINT}"
    ))
}

/// A list in scope; errors named for the user.
pub async fn list<K>(
    cluster: &Cluster,
    api: Api<K>,
    params: &ListParams,
    resource: &str,
) -> Result<Vec<K>, CliError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.list(params).await {
        Ok(list) => Ok(list.items),
        Err(error) => Err(cluster.explain(error, Action::new("list", resource)).await),
    }
}

/// The namespaced resource `K` in every namespace (`-A`), else in the one of `-n`.
pub fn scoped<K>(cluster: &Cluster, all_namespaces: bool) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    if all_namespaces {
        Api::all(cluster.client.clone())
    } else {
        Api::namespaced(cluster.client.clone(), &cluster.namespace)
    }
}

/// Every StorageClass; errors named for the user.
pub async fn storage_classes(cluster: &Cluster) -> Result<Vec<StorageClass>, CliError> {
    let api = Api::<StorageClass>::all(cluster.client.clone());
    list(
        cluster,
        api,
        &ListParams::default(),
        "storageclasses.storage.k8s.io",
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_error(code: u16, message: &str) -> kube::Error {
        let mut status = Status::failure(message, "");
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn forbidden_names_the_verb_and_resource() {
        let error = classify(
            &api_error(403, "nope"),
            Action::new("create", RESIZES),
            "prod",
            "https://x",
        );
        assert_eq!(
            error,
            CliError::Forbidden(
                "forbidden: you may not create volumeresizes.ferry.dev in namespace \"prod\"; ask for \
                 RBAC permission (server said: nope)"
                    .into()
            )
        );
    }

    #[test]
    fn not_found_and_unauthorized() {
        let error = classify(
            &api_error(404, "gone"),
            Action::named("get", RESIZES, "x"),
            "ns",
            "s",
        );
        assert_eq!(
            error,
            CliError::NotFound("volumeresizes.ferry.dev \"x\" not found in namespace \"ns\"".into())
        );
        let error = classify(&api_error(401, "who"), Action::new("get", RESIZES), "ns", "s");
        assert!(matches!(error, CliError::Unreachable(_)));
        let error = classify(&api_error(422, "bad"), Action::new("create", RESIZES), "ns", "s");
        assert!(matches!(error, CliError::Usage(_)));
    }

    #[test]
    fn crd_hint_says_how_to_install() {
        assert!(
            crd_missing()
                .to_string()
                .contains("ferry crd | kubectl apply -f -")
        );
    }
}
