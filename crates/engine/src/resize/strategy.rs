//! Which strategy a PVC gets: expand in place, or copy to a new volume.

use ferry_api::{ChosenStrategy, Strategy};

/// The facts the choice depends on, for one PVC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrategyInput {
    pub requested: Strategy,
    pub current_bytes: u64,
    pub target_bytes: u64,
    pub class_changes: bool,
    pub class_allows_expansion: bool,
    /// Another VolumeAttributesClass is asked for: a change the driver makes in place.
    pub attributes_change: bool,
}

/// Why a requested strategy cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategyRefusal {
    InPlaceShrink,
    InPlaceClassChange,
    InPlaceNotExpandable,
}

impl std::fmt::Display for StrategyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StrategyRefusal::InPlaceShrink => "InPlace cannot shrink a volume; use strategy Auto or Copy",
            StrategyRefusal::InPlaceClassChange => {
                "InPlace cannot change the StorageClass; use strategy Auto or Copy"
            }
            StrategyRefusal::InPlaceNotExpandable => {
                "the StorageClass does not allow volume expansion, so InPlace is impossible; use strategy Auto or Copy"
            }
        })
    }
}

/// `None` when the PVC already has the target size, class and attributes class. An attributes
/// class alone is changed in place (never by copy, unless a copy is asked for).
pub fn choose(input: StrategyInput) -> Result<Option<ChosenStrategy>, StrategyRefusal> {
    let same_size = input.current_bytes == input.target_bytes;
    if same_size && !input.class_changes && !input.attributes_change {
        return Ok(None);
    }
    let grows_in_place =
        input.target_bytes > input.current_bytes && !input.class_changes && input.class_allows_expansion;
    let expandable = grows_in_place || (same_size && !input.class_changes);
    match input.requested {
        Strategy::Copy => Ok(Some(ChosenStrategy::Copy)),
        Strategy::Auto if expandable => Ok(Some(ChosenStrategy::InPlace)),
        Strategy::Auto => Ok(Some(ChosenStrategy::Copy)),
        Strategy::InPlace if expandable => Ok(Some(ChosenStrategy::InPlace)),
        Strategy::InPlace if input.class_changes => Err(StrategyRefusal::InPlaceClassChange),
        Strategy::InPlace if input.target_bytes < input.current_bytes => Err(StrategyRefusal::InPlaceShrink),
        Strategy::InPlace => Err(StrategyRefusal::InPlaceNotExpandable),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(
        requested: Strategy,
        current: u64,
        target: u64,
        class_changes: bool,
        expandable: bool,
    ) -> StrategyInput {
        StrategyInput {
            requested,
            current_bytes: current,
            target_bytes: target,
            class_changes,
            class_allows_expansion: expandable,
            attributes_change: false,
        }
    }

    #[test]
    fn table() {
        use ChosenStrategy::*;
        let cases = [
            (input(Strategy::Auto, 10, 20, false, true), Ok(Some(InPlace))),
            (input(Strategy::Auto, 10, 20, false, false), Ok(Some(Copy))),
            (input(Strategy::Auto, 20, 10, false, true), Ok(Some(Copy))),
            (input(Strategy::Auto, 10, 20, true, true), Ok(Some(Copy))),
            (input(Strategy::Auto, 10, 10, false, true), Ok(None)),
            (input(Strategy::Copy, 10, 20, false, true), Ok(Some(Copy))),
            (input(Strategy::Copy, 10, 10, false, true), Ok(None)),
            (input(Strategy::InPlace, 10, 20, false, true), Ok(Some(InPlace))),
            (
                input(Strategy::InPlace, 20, 10, false, true),
                Err(StrategyRefusal::InPlaceShrink),
            ),
            (
                input(Strategy::InPlace, 10, 20, true, true),
                Err(StrategyRefusal::InPlaceClassChange),
            ),
            (
                input(Strategy::InPlace, 10, 20, false, false),
                Err(StrategyRefusal::InPlaceNotExpandable),
            ),
        ];
        for (case, expected) in cases {
            assert_eq!(choose(case), expected, "{case:?}");
        }
    }

    /// Another attributes class alone is an in-place change, on any class; with a copy's reasons
    /// (a shrink, another class, a class that cannot grow) it is a copy onto a volume made with it.
    #[test]
    fn an_attributes_class_change_is_in_place_unless_a_copy_is_needed_anyway() {
        use ChosenStrategy::*;
        let attributes = |requested, current, target, class_changes, expandable| StrategyInput {
            attributes_change: true,
            ..input(requested, current, target, class_changes, expandable)
        };
        let cases = [
            (
                attributes(Strategy::Auto, 10, 10, false, false),
                Ok(Some(InPlace)),
            ),
            (
                attributes(Strategy::InPlace, 10, 10, false, false),
                Ok(Some(InPlace)),
            ),
            (attributes(Strategy::Auto, 10, 20, false, true), Ok(Some(InPlace))),
            (attributes(Strategy::Auto, 10, 20, false, false), Ok(Some(Copy))),
            (attributes(Strategy::Auto, 20, 10, false, true), Ok(Some(Copy))),
            (attributes(Strategy::Auto, 10, 10, true, true), Ok(Some(Copy))),
            (attributes(Strategy::Copy, 10, 10, false, true), Ok(Some(Copy))),
            (
                attributes(Strategy::InPlace, 10, 10, true, true),
                Err(StrategyRefusal::InPlaceClassChange),
            ),
        ];
        for (case, expected) in cases {
            assert_eq!(choose(case), expected, "{case:?}");
        }
    }
}
