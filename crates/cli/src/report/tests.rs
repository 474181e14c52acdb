use super::*;
use crate::args::parse_price;

const GIB: u64 = 1 << 30;

fn volume(claim: &str, class: &str, size: u64, used: Option<u64>) -> VolumeFacts {
    VolumeFacts {
        namespace: "prod".into(),
        stateful_set: "db".into(),
        template: "data".into(),
        claim: claim.into(),
        storage_class: Some(class.into()),
        size_bytes: Some(size),
        used_bytes: used,
    }
}

#[test]
fn the_recommended_size_holds_the_data_below_the_fill_and_the_saving_is_priced_per_gib() {
    let facts = ReportFacts {
        volumes: vec![
            // 100 GiB holding 8 GiB: 10 GiB keeps it at 80 %, 90 GiB saved at 0.10.
            volume("data-db-0", "gp3", 100 * GIB, Some(8 * GIB)),
            // Fuller than 80 %: the recommendation is larger, nothing is saved.
            volume("data-db-1", "gp3", 10 * GIB, Some(9 * GIB)),
            // Usage unknown: no recommendation.
            volume("data-db-2", "gp3", 10 * GIB, None),
            // A class without a price: recommended, not priced.
            volume("logs-db-0", "slow", 50 * GIB, Some(GIB)),
        ],
        prices: BTreeMap::from([("gp3".to_string(), 0.10)]),
        ..ReportFacts::default()
    };
    let report = report(&facts);
    let first = &report.volumes[0];
    assert_eq!(first.claim, "data-db-0");
    assert_eq!(first.recommended_bytes, Some(10 * GIB));
    assert!((first.saving_per_month.unwrap() - 9.0).abs() < 1e-9);
    let by_claim = |name: &str| report.volumes.iter().find(|r| r.claim == name).unwrap();
    assert_eq!(by_claim("data-db-1").recommended_bytes, Some(11_520 << 20));
    assert_eq!(by_claim("data-db-1").saving_per_month, Some(0.0));
    assert_eq!(by_claim("data-db-2").recommended_bytes, None);
    assert_eq!(by_claim("data-db-2").saving_per_month, None);
    assert_eq!(by_claim("logs-db-0").recommended_bytes, Some(1_280 << 20));
    assert_eq!(by_claim("logs-db-0").saving_per_month, None);
    assert!((report.total_saving_per_month - 9.0).abs() < 1e-9);
    assert_eq!(report.total_size_bytes, 170 * GIB);
    assert_eq!(report.notes.len(), 1);
    assert!(
        report.notes[0].contains("no price set for slow"),
        "{:?}",
        report.notes
    );
}

#[test]
fn an_empty_volume_is_recommended_one_mebibyte_not_zero() {
    let facts = ReportFacts {
        volumes: vec![volume("data-db-0", "gp3", GIB, Some(0))],
        ..ReportFacts::default()
    };
    assert_eq!(report(&facts).volumes[0].recommended_bytes, Some(1 << 20));
}

#[test]
fn prices_are_class_equals_a_number_of_zero_or_more() {
    assert_eq!(parse_price("gp3=0.08"), Ok(("gp3".to_string(), 0.08)));
    assert!(parse_price("gp3").is_err());
    assert!(parse_price("gp3=cheap").is_err());
    assert!(parse_price("gp3=-1").is_err());
    assert!(parse_price("=1").is_err());
}
