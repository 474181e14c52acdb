//! A fresh namespace per test, so tests run in parallel without seeing each other.

use crate::{Error, wait_until};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use rand::Rng;

/// Label on every test namespace, so leftovers can be found.
pub const TEST_NAMESPACE_LABEL: &str = "ferry.dev/test";

pub struct TestNamespace {
    pub name: String,
    pub client: Client,
}

impl TestNamespace {
    /// Creates `<prefix>-<random>` and waits for its default ServiceAccount (pods need it).
    pub async fn create(client: &Client, prefix: &str) -> Result<Self, Error> {
        let suffix: u32 = rand::rng().random_range(0..0xff_ffff);
        let name = format!("{prefix}-{suffix:06x}");
        let namespace: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { TEST_NAMESPACE_LABEL: "true" } }
        }))
        .map_err(|e| Error::Setup(e.to_string()))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &name);
        wait_until("the namespace's default ServiceAccount", 60, || async {
            accounts.get_opt("default").await.ok().flatten()
        })
        .await?;
        Ok(TestNamespace {
            name,
            client: client.clone(),
        })
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Deletes the namespace, in the background (the namespace controller removes what is in
    /// it); one a test deleted already is fine.
    pub async fn cleanup(self) -> Result<(), Error> {
        match Api::<Namespace>::all(self.client.clone())
            .delete(&self.name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(error.into()),
        }
    }
}
