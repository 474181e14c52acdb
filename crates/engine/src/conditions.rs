//! Setting conditions the Kubernetes way: the transition time changes only when the status does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Puts `wanted` into `conditions`, keeping the old `lastTransitionTime` when the status is unchanged.
pub fn set_condition(conditions: &mut Vec<Condition>, mut wanted: Condition) {
    match conditions.iter_mut().find(|c| c.type_ == wanted.type_) {
        Some(existing) => {
            if existing.status == wanted.status {
                wanted.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = wanted;
        }
        None => conditions.push(wanted),
    }
}

/// Drops the condition of the given type.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}

pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: generation,
        last_transition_time: now.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    #[test]
    fn transition_time_kept_while_status_unchanged() {
        let t1 = Time(Timestamp::from_second(1).unwrap());
        let t2 = Time(Timestamp::from_second(2).unwrap());
        let mut conditions = vec![condition("Prechecked", false, "A", "a", Some(1), &t1)];
        set_condition(
            &mut conditions,
            condition("Prechecked", false, "B", "b", Some(1), &t2),
        );
        assert_eq!(conditions[0].last_transition_time, t1);
        assert_eq!(conditions[0].reason, "B");
        set_condition(
            &mut conditions,
            condition("Prechecked", true, "C", "c", Some(1), &t2),
        );
        assert_eq!(conditions[0].last_transition_time, t2);
        assert_eq!(conditions.len(), 1);
    }
}
