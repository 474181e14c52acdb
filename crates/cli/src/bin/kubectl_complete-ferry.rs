//! `kubectl_complete-ferry`: what kubectl (1.26 and later) runs to complete `kubectl ferry …`
//! (see `kubectl_ferry::completion`). Any error offers nothing rather than a message: a
//! completion must never print into the user's command line.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams};
use kubectl_ferry::args::{ColorChoice, GlobalArgs};
use kubectl_ferry::completion::{Typed, Wanted, answer, commands, files_answer, wanted};
use kubectl_ferry::kube_io::{Cluster, connect};
use std::io::Write;

fn main() {
    let words: Vec<String> = std::env::args().skip(1).collect();
    let typing = words.last().cloned().unwrap_or_default();
    let (wanted, typed) = wanted(&words);
    if wanted == Wanted::Files {
        let _ = std::io::stdout().write_all(files_answer().as_bytes());
        return;
    }
    let candidates = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(candidates(wanted, typed)),
        Err(_) => Vec::new(),
    };
    let _ = std::io::stdout().write_all(answer(&candidates, &typing).as_bytes());
}

async fn candidates(wanted: Wanted, typed: Typed) -> Vec<String> {
    if wanted == Wanted::Commands {
        return commands();
    }
    if wanted == Wanted::Nothing {
        return Vec::new();
    }
    let global = GlobalArgs {
        kubeconfig: typed.kubeconfig.map(Into::into),
        context: typed.context,
        namespace: typed.namespace,
        color: ColorChoice::Never,
        as_user: None,
        as_groups: Vec::new(),
        request_timeout: Some(std::time::Duration::from_secs(5)),
    };
    let Ok(cluster) = connect(&global).await else {
        return Vec::new();
    };
    names(&cluster, wanted).await.unwrap_or_default()
}

async fn names(cluster: &Cluster, wanted: Wanted) -> Option<Vec<String>> {
    let client = cluster.client.clone();
    let names_of = |items: Vec<kube::core::ObjectMeta>| -> Vec<String> {
        items.into_iter().filter_map(|meta| meta.name).collect()
    };
    Some(match wanted {
        Wanted::Namespaces => {
            let list = Api::<Namespace>::all(client)
                .list(&ListParams::default())
                .await
                .ok()?;
            names_of(list.items.into_iter().map(|item| item.metadata).collect())
        }
        Wanted::StatefulSets => {
            let api = Api::<StatefulSet>::namespaced(client, &cluster.namespace);
            let list = api.list(&ListParams::default()).await.ok()?;
            names_of(list.items.into_iter().map(|item| item.metadata).collect())
        }
        Wanted::StorageClasses => {
            let list = Api::<StorageClass>::all(client)
                .list(&ListParams::default())
                .await
                .ok()?;
            names_of(list.items.into_iter().map(|item| item.metadata).collect())
        }
        Wanted::Templates(stateful_set) => cluster
            .templates(&stateful_set)
            .await
            .ok()?
            .into_iter()
            .map(|template| template.name)
            .collect(),
        Wanted::VolumeResizes => {
            let list = cluster
                .resizes()
                .list_metadata(&ListParams::default())
                .await
                .ok()?;
            names_of(list.items.into_iter().map(|item| item.metadata).collect())
        }
        Wanted::Commands | Wanted::Files | Wanted::Nothing => Vec::new(),
    })
}
