//! The real operator of Elastic Cloud on Kubernetes (ECK) on the test control plane, the second real
//! owner in tests of StatefulSets another operator owns (#58): its CRDs ([`install_crds`]), the
//! operator as a child process watching one test namespace ([`start`]), and an `Elasticsearch`
//! whose one node set runs on the real nodes ([`running_elasticsearch`]).
//!
//! The pods run [`STANDIN_IMAGE`], not Elasticsearch (`scripts/lib/ferry_images.py`): ECK's init
//! containers run its scripts there, and the main container writes a file to its data volume and
//! sleeps. Nothing answers ECK's HTTP client, so ECK reports the cluster unreachable and does what it
//! does without one: it makes and updates the node set's StatefulSet, resizes its claims when the
//! node set's storage grows, and never rolls its pods.

use crate::operator_process::{Operator, OperatorProcess};
use crate::{Error, fixtures, wait};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;
use tokio::sync::OnceCell;

/// The stand-in for Elasticsearch, imported into every real node by `scripts/testenv up`.
pub const STANDIN_IMAGE: &str = "ferry.local/es-standin:dev";
/// The Elasticsearch version the resource names (ECK accepts 7.0 to 9.x and never checks the image).
pub const VERSION: &str = "8.17.0";
/// The file the stand-in writes to its data volume when it starts, under the template's mount.
pub const SEED_FILE: &str = "/usr/share/elasticsearch/data/seed";
/// The node set's volume claim template (ECK's default name).
pub const DATA_TEMPLATE: &str = "elasticsearch-data";

/// A running ECK operator; dropped, it is killed.
pub type EckOperator = OperatorProcess;

/// Starts ECK's operator for `namespace` (its operator namespace and the one it watches) and waits
/// until its manager serves metrics.
pub async fn start(namespace: &str) -> Result<EckOperator, Error> {
    OperatorProcess::start(Operator::Eck, namespace).await
}

/// Applies every CRD of the pinned release (`config/crds/v1/all-crds.yaml`: ECK will not start
/// without all of them) and waits until each is served: once per test process.
pub async fn install_crds(client: &kube::Client) -> Result<(), Error> {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    crate::test_bed_crds::install(client, "eck-operator-crds.yaml", &INSTALLED).await
}

/// The namespaced `Elasticsearch` resources (`elasticsearch.k8s.elastic.co/v1`).
pub fn elasticsearches(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let kind = GroupVersionKind::gvk("elasticsearch.k8s.elastic.co", "v1", "Elasticsearch");
    let resource = ApiResource::from_gvk_with_plural(&kind, "elasticsearches");
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// An `Elasticsearch` `name` with one node set `node_set` of one node on the real nodes, its data on
/// a claim of `class` and `size`; the stand-in's container writes [`SEED_FILE`] and sleeps.
pub fn elasticsearch_resource(name: &str, node_set: &str, class: &str, size: &str) -> serde_json::Value {
    json!({
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": name},
        "spec": {
            "version": VERSION,
            "image": STANDIN_IMAGE,
            "http": {"tls": {"selfSignedCertificate": {"disabled": true}}},
            "nodeSets": [{
                "name": node_set,
                "count": 1,
                "volumeClaimTemplates": [{
                    "metadata": {"name": DATA_TEMPLATE},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": class,
                        "resources": {"requests": {"storage": size}},
                    },
                }],
                "podTemplate": {"spec": {
                    "nodeSelector": {crate::REAL_NODE_KEY: "true"},
                    "tolerations": [{"key": crate::REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"}],
                    "terminationGracePeriodSeconds": 5,
                    "containers": [{
                        "name": "elasticsearch",
                        // Once per volume: a copy must bring the first start's moment along.
                        "command": ["/bin/sh", "-c", format!("[ -f {SEED_FILE} ] || date +%s%N > {SEED_FILE}; exec sleep 2147483647")],
                        // ECK's defaults are Elasticsearch's (2Gi, a probe of port 8080, a preStop
                        // that waits 50 s): the stand-in needs none of them.
                        "resources": {"requests": {"memory": "64Mi", "cpu": "10m"}, "limits": {"memory": "64Mi"}},
                        "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2},
                        "lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
                    }],
                }},
            }],
        },
    })
}

/// The StatefulSet ECK makes for node set `node_set` of `name`.
pub fn stateful_set_name(name: &str, node_set: &str) -> String {
    format!("{name}-es-{node_set}")
}

/// ECK's operator watching `namespace` (running until the caller kills or drops it), and its
/// `Elasticsearch` `name` (see [`elasticsearch_resource`]) Ready on its node set's StatefulSet.
pub async fn running_elasticsearch(
    client: &kube::Client,
    namespace: &str,
    (name, node_set): (&str, &str),
    (class, size): (&str, &str),
) -> Result<(EckOperator, Api<DynamicObject>), Error> {
    install_crds(client).await?;
    let operator = start(namespace).await?;
    let resource: DynamicObject = serde_json::from_value(elasticsearch_resource(name, node_set, class, size))
        .map_err(|e| Error::Setup(format!("the Elasticsearch resource: {e}")))?;
    let api = elasticsearches(client, namespace);
    api.create(&PostParams::default(), &resource).await?;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    let sts = stateful_set_name(name, node_set);
    wait::wait_for_object(&sets, &sts, "ECK to make the node set's StatefulSet", 120, |_| {
        true
    })
    .await?;
    fixtures::wait_ready(&sets, &sts, 1, 240).await?;
    Ok((operator, api))
}
