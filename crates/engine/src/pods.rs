//! What every part of Ferry asks of a pod.

use k8s_openapi::api::core::v1::{Pod, PodSpec};

/// The pod's `Ready` condition is `True`.
pub fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
}

/// The user a workload's pods run as when its template names one other than root. Where Pod
/// Security `restricted` admits no root pod, Ferry's own pods on that workload's volumes run as it,
/// with no capability: its files are this user's, so a copy keeps their owners as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunAs {
    pub user: i64,
    pub group: Option<i64>,
    /// The kubelet gives the volumes' roots this group (writable by it) when the pod mounts them.
    pub fs_group: Option<i64>,
    pub supplemental_groups: Vec<i64>,
    pub fs_group_change_policy: Option<String>,
}

/// Who the template's first container (the one that writes the data) runs as: its own
/// `runAsUser`/`runAsGroup`, else the pod's. `None` when no user is named (the image decides, which
/// Ferry cannot see) or it is root.
pub fn run_as(pod: &PodSpec) -> Option<RunAs> {
    let pod_level = pod.security_context.as_ref();
    let container = pod.containers.first().and_then(|c| c.security_context.as_ref());
    let user = (container.and_then(|c| c.run_as_user)).or(pod_level.and_then(|p| p.run_as_user))?;
    if user == 0 {
        return None;
    }
    Some(RunAs {
        user,
        group: (container.and_then(|c| c.run_as_group)).or(pod_level.and_then(|p| p.run_as_group)),
        fs_group: pod_level.and_then(|p| p.fs_group),
        supplemental_groups: pod_level
            .and_then(|p| p.supplemental_groups.clone())
            .unwrap_or_default(),
        fs_group_change_policy: pod_level.and_then(|p| p.fs_group_change_policy.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSecurityContext, SecurityContext};

    fn pod(pod_user: Option<i64>, container_user: Option<i64>) -> PodSpec {
        PodSpec {
            security_context: Some(PodSecurityContext {
                run_as_user: pod_user,
                run_as_group: Some(3000),
                fs_group: Some(2000),
                supplemental_groups: Some(vec![4000]),
                ..PodSecurityContext::default()
            }),
            containers: vec![Container {
                security_context: Some(SecurityContext {
                    run_as_user: container_user,
                    ..SecurityContext::default()
                }),
                ..Container::default()
            }],
            ..PodSpec::default()
        }
    }

    #[test]
    fn the_writing_containers_user_wins_over_the_pods() {
        let found = run_as(&pod(Some(1000), Some(999))).unwrap();
        assert_eq!(
            found,
            RunAs {
                user: 999,
                group: Some(3000),
                fs_group: Some(2000),
                supplemental_groups: vec![4000],
                fs_group_change_policy: None,
            }
        );
        assert_eq!(run_as(&pod(Some(1000), None)).unwrap().user, 1000);
    }

    #[test]
    fn root_or_no_user_named_is_none() {
        assert_eq!(run_as(&pod(None, None)), None);
        assert_eq!(run_as(&pod(Some(1000), Some(0))), None);
        assert_eq!(run_as(&PodSpec::default()), None);
    }
}
