//! The guarded writes that hand a volume from one claim to another by PV re-binding. A copy's swap
//! and rollback (`resize`) and a blue/green move (`extended::handover`) make the same ones, so both
//! plans carry this one type and the operator carries it out in one place. Each write names the
//! UID it is meant for: an object re-created under the same name is never touched.

/// One guarded write of a volume or claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeWrite {
    /// Keep (or give back) a volume's data when its claim goes away: its reclaim policy.
    /// `uid`: only if the volume still has it (a PV re-created under the same name is not touched).
    SetReclaimPolicy {
        volume: String,
        uid: Option<String>,
        policy: String,
    },
    /// Delete a claim, only if it still has this UID.
    DeleteClaim { claim: String, uid: String },
    /// Reserve a released volume for a claim name (clears the old claim's UID); `uid` as above.
    ReserveVolume {
        volume: String,
        uid: Option<String>,
        claim: String,
    },
    /// Touch a claim whose binding stalled (an annotation), so the PV controller syncs it now;
    /// only the claim of this UID.
    NudgeClaim { claim: String, uid: String },
}
