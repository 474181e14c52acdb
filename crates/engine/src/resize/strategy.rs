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

/// `None` when the PVC already has the target size and class.
pub fn choose(input: StrategyInput) -> Result<Option<ChosenStrategy>, StrategyRefusal> {
    let unchanged = input.current_bytes == input.target_bytes && !input.class_changes;
    if unchanged {
        return Ok(None);
    }
    let expandable =
        input.target_bytes > input.current_bytes && !input.class_changes && input.class_allows_expansion;
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
}
