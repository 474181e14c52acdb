//! What to tell about a vshn resize that is not idle: which of the controller's steps it stands
//! at, what holds the data, and the commands that finish it or roll it back. Nothing is imported
//! for it: a Ferry VolumeResize would start again from claims vshn may already have replaced.

use super::vshn_names::{backup_claim, copy_job};
use super::vshn_state::{Claim, Marks};

/// The StatefulSet the steps are about.
pub struct Subject<'a> {
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub marks: &'a Marks,
    /// The replicas to come back to: vshn's record, else the spec's.
    pub replicas: Option<i32>,
    pub spec_replicas: Option<i32>,
}

impl Subject<'_> {
    /// `kubectl -n NS` (or `kubectl`).
    fn kubectl(&self) -> String {
        self.namespace
            .map_or("kubectl".to_string(), |ns| format!("kubectl -n {ns}"))
    }

    fn replicas(&self) -> String {
        self.replicas
            .map_or("<the replicas it had>".to_string(), |n| n.to_string())
    }

    fn scale_back(&self) -> String {
        format!(
            "`{} scale sts {} --replicas={}`",
            self.kubectl(),
            self.name,
            self.replicas()
        )
    }

    fn unmark(&self) -> String {
        let p = self.marks.prefix;
        format!(
            "`{} annotate sts {} {p}pvcs- {p}replicas- {p}scalup-`",
            self.kubectl(),
            self.name
        )
    }

    fn let_it_finish(&self) -> String {
        format!(
            "keep vshn's controller running until the annotation {}pvcs is [] and the StatefulSet is \
             back at {} replicas, then stop it and import again",
            self.marks.prefix,
            self.replicas()
        )
    }
}

fn backup(claim: &Claim) -> String {
    match &claim.original_size {
        Some(size) => backup_claim(&claim.name, size),
        None => format!("{}-backup-<size>", claim.name),
    }
}

fn target(claim: &Claim) -> String {
    claim
        .target_size
        .clone()
        .unwrap_or_else(|| "its new size".to_string())
}

fn list(claims: &[&Claim], each: impl Fn(&Claim) -> String) -> String {
    claims.iter().map(|c| each(c)).collect::<Vec<_>>().join(", ")
}

fn split(marks: &Marks) -> (Vec<&Claim>, Vec<&Claim>) {
    marks.claims.iter().partition(|c| c.backed_up && !c.restored)
}

/// Scaling down or copying to the backups: the original claims hold the data.
pub fn backing_up(subject: &Subject) -> String {
    let claims: Vec<&Claim> = subject.marks.claims.iter().collect();
    let step = if subject.spec_replicas == Some(0) {
        format!(
            "backup step (it scaled the StatefulSet from {} to 0 and copies each claim to a backup)",
            subject.replicas()
        )
    } else {
        "scale-down step (claims recorded, the StatefulSet not yet at 0 replicas)".to_string()
    };
    format!(
        "not imported: vshn's controller is in the middle of a resize, at its {step}: {}. None is \
         backed up yet, so the original claims still hold the data; a VolumeResize now would act \
         beside vshn on a StatefulSet it scales to zero. Either let vshn finish: {}. Or roll it back: \
         stop vshn's controller, then `{k} delete job {}` and `{k} delete pvc {}` (vshn's partial \
         copies, never the claims themselves), {}, {}, and import again",
        list(&claims, |c| format!(
            "{} ({} → {})",
            c.name,
            c.original_size.as_deref().unwrap_or("?"),
            target(c)
        )),
        subject.let_it_finish(),
        list(&claims, |c| copy_job(&c.name, &backup(c))),
        list(&claims, backup),
        subject.scale_back(),
        subject.unmark(),
        k = subject.kubectl(),
    )
}

/// How to copy a backup back by hand, as vshn's restore Job did.
fn restore_by_hand(restoring: &[&Claim]) -> String {
    format!(
        "for each of {}: a claim still at its old size still holds its data (nothing was lost: roll \
         back as for a backup in progress); else make sure it exists at its new size, copy its backup \
         into it with a Job mounting both (as vshn's {} did: rsync -aHAX /src/ /dst/), and check the \
         data",
        list(restoring, |c| format!(
            "{} (backup {}, {})",
            c.name,
            backup(c),
            target(c)
        )),
        list(restoring, |c| copy_job(&backup(c), &c.name)),
    )
}

/// A claim backed up and not restored: its data may be only in the backup.
pub fn restoring(subject: &Subject) -> String {
    let (restoring, waiting) = split(subject.marks);
    let waiting = if waiting.is_empty() {
        String::new()
    } else {
        format!(
            " Not backed up yet, still holding their data: {} (delete their partial backups {}; the \
             next import makes a VolumeResize for them).",
            list(&waiting, |c| c.name.clone()),
            list(&waiting, backup)
        )
    };
    format!(
        "not imported: vshn's controller is in the restore step of a resize. Backed up and not yet \
         restored: {}; such a claim may already have been deleted and re-created, empty, at the new \
         size, and until its restore completes its data may be only in its backup. Nothing may start \
         again from the original claims.{waiting} Finish it: {}. With vshn gone, finish by hand: {}; \
         then {} and {}. Delete the backup claims only once the data is checked",
        list(&restoring, |c| format!("{} (backup {})", c.name, backup(c))),
        subject.let_it_finish(),
        restore_by_hand(&restoring),
        subject.scale_back(),
        subject.unmark(),
    )
}

/// The controller gave up (a copy Job failed) and never resumes.
pub fn failed(subject: &Subject) -> String {
    let (restoring, waiting) = split(subject.marks);
    let mut text = format!(
        "not imported: vshn's controller gave up on this StatefulSet (label {}failed=true: a copy Job \
         failed) and never resumes it.",
        subject.marks.prefix
    );
    if !restoring.is_empty() {
        text.push_str(&format!(
            " Backed up, and maybe re-created empty since: {}; restore them first: {}.",
            list(&restoring, |c| c.name.clone()),
            restore_by_hand(&restoring)
        ));
    }
    if !waiting.is_empty() {
        text.push_str(&format!(
            " Not backed up, still holding their data: {}; delete the Jobs {} and the partial \
             backups {}.",
            list(&waiting, |c| c.name.clone()),
            list(&waiting, |c| copy_job(&c.name, &backup(c))),
            list(&waiting, backup)
        ));
    }
    text.push_str(&format!(
        " Then make sure it runs its replicas ({}; vshn scales back up by itself only after a failed \
         backup), remove its marks ({} and `{} label sts {} {}failed-`), and import again",
        subject.scale_back(),
        subject.unmark(),
        subject.kubectl(),
        subject.name,
        subject.marks.prefix
    ));
    text
}

pub fn scaled_down(subject: &Subject) -> String {
    format!(
        "not imported: vshn's controller scaled this StatefulSet from {} to 0 and recorded no claim to \
         resize. Scale it back ({}, then `{} annotate sts {} {}replicas-`) and import again",
        subject.replicas(),
        subject.scale_back(),
        subject.kubectl(),
        subject.name,
        subject.marks.prefix
    )
}

pub fn scaling_up(subject: &Subject, running: i32) -> String {
    format!(
        "not imported yet: vshn's controller has copied the data and is scaling the StatefulSet back to \
         {} replicas ({running} run); no data is at risk. Import again once all are back",
        subject.replicas()
    )
}

pub fn leftovers(subject: &Subject) -> String {
    let p = subject.marks.prefix;
    format!(
        "{p}replicas and {p}scalup are left from a finished vshn resize (vshn never removes them); \
         remove them: {}",
        subject.unmark()
    )
}
