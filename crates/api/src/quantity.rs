//! Kubernetes resource quantities as byte counts, for storage sizes.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PersistentVolumeClaimSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use thiserror::Error;

/// The storage a claim, or a StatefulSet's claim template, requests, as written.
pub fn requested_storage(spec: Option<&PersistentVolumeClaimSpec>) -> Option<&Quantity> {
    spec?.resources.as_ref()?.requests.as_ref()?.get("storage")
}

/// A claim's size in bytes: its capacity once bound, else what it requests.
pub fn claim_size_bytes(claim: &PersistentVolumeClaim) -> Option<u64> {
    let capacity = (claim.status.as_ref().and_then(|s| s.capacity.as_ref()))
        .and_then(|c| c.get("storage"))
        .and_then(quantity_bytes);
    capacity.or_else(|| requested_storage(claim.spec.as_ref()).and_then(quantity_bytes))
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseQuantityError {
    #[error("{0:?} is not a Kubernetes quantity (expected e.g. 10Gi, 500Mi, 1.5T)")]
    Malformed(String),
    #[error("{0:?} must be greater than zero")]
    NotPositive(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Bytes of a quantity, `None` when it is not a whole number of bytes (see [`parse_bytes`]).
pub fn quantity_bytes(quantity: &Quantity) -> Option<u64> {
    parse_bytes(&quantity.0).ok()
}

/// Parses a storage quantity (`10Gi`, `1.5G`, `1e9`, `500Mi`) into bytes, rounding a fractional byte
/// up as the API server does for storage requests. Rejects zero and negative values.
pub fn parse_bytes(text: &str) -> Result<u64, ParseQuantityError> {
    let malformed = || ParseQuantityError::Malformed(text.to_string());
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed != text {
        return Err(malformed());
    }
    let number_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(trimmed.len());
    let (number, suffix) = trimmed.split_at(number_end);
    let (sign_negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !fraction.chars().all(|c| c.is_ascii_digit())
    {
        return Err(malformed());
    }
    let (multiplier, exponent) = suffix_scale(suffix).ok_or_else(malformed)?;
    // value = (whole.fraction) * multiplier * 10^exponent, computed exactly as a fraction.
    let mut numerator: u128 = 0;
    for c in whole.chars().chain(fraction.chars()) {
        numerator = numerator
            .checked_mul(10)
            .and_then(|n| n.checked_add(u128::from(c as u8 - b'0')))
            .ok_or_else(|| ParseQuantityError::TooLarge(text.to_string()))?;
    }
    let too_large = || ParseQuantityError::TooLarge(text.to_string());
    numerator = numerator.checked_mul(multiplier).ok_or_else(too_large)?;
    let mut decimal_shift = exponent - i32::try_from(fraction.len()).map_err(|_| malformed())?;
    while decimal_shift > 0 {
        numerator = numerator.checked_mul(10).ok_or_else(too_large)?;
        decimal_shift -= 1;
    }
    let mut denominator: u128 = 1;
    while decimal_shift < 0 {
        denominator = denominator.checked_mul(10).ok_or_else(too_large)?;
        decimal_shift += 1;
    }
    let bytes = numerator.div_ceil(denominator);
    if sign_negative || bytes == 0 {
        return Err(ParseQuantityError::NotPositive(text.to_string()));
    }
    u64::try_from(bytes).map_err(|_| too_large())
}

/// Binary or decimal multiplier and decimal exponent of a quantity suffix.
fn suffix_scale(suffix: &str) -> Option<(u128, i32)> {
    let binary = |power: u32| Some((1u128 << (10 * power), 0));
    match suffix {
        "" => Some((1, 0)),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "m" => Some((1, -3)),
        "k" => Some((1, 3)),
        "M" => Some((1, 6)),
        "G" => Some((1, 9)),
        "T" => Some((1, 12)),
        "P" => Some((1, 15)),
        "E" => Some((1, 18)),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            Some((1, exponent.parse::<i32>().ok().filter(|e| e.abs() <= 30)?))
        }
    }
}

/// Formats bytes the way people read sizes: the largest binary unit that divides exactly, else bytes.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["Ei", "Pi", "Ti", "Gi", "Mi", "Ki"];
    for (index, unit) in UNITS.iter().enumerate() {
        let power = 6 - index as u32;
        let scale = 1u64 << (10 * power);
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    bytes.to_string()
}

/// Human-readable approximate size (`1.5 GiB`), for messages.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_binary_and_decimal_suffixes() {
        assert_eq!(parse_bytes("1Ki"), Ok(1024));
        assert_eq!(parse_bytes("10Gi"), Ok(10 * 1024 * 1024 * 1024));
        assert_eq!(parse_bytes("1.5Gi"), Ok(1536 * 1024 * 1024));
        assert_eq!(parse_bytes("1G"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("1e3"), Ok(1000));
        assert_eq!(parse_bytes("1500m"), Ok(2));
        assert_eq!(parse_bytes("123"), Ok(123));
        assert_eq!(parse_bytes(".5Ki"), Ok(512));
    }

    #[test]
    fn rejects_malformed_and_non_positive() {
        for bad in [
            "", "abc", "10GB", "10 Gi", " 10Gi", "1.2.3Gi", "Gi", "1e99", "--1",
        ] {
            assert!(
                matches!(parse_bytes(bad), Err(ParseQuantityError::Malformed(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_bytes("0"),
            Err(ParseQuantityError::NotPositive(_))
        ));
        assert!(matches!(
            parse_bytes("-1Gi"),
            Err(ParseQuantityError::NotPositive(_))
        ));
        assert!(matches!(
            parse_bytes("100Ei"),
            Err(ParseQuantityError::TooLarge(_))
        ));
    }

    #[test]
    fn formats_exact_units() {
        assert_eq!(format_bytes(10 * 1024 * 1024 * 1024), "10Gi");
        assert_eq!(format_bytes(1536 * 1024 * 1024), "1536Mi");
        assert_eq!(format_bytes(1000), "1000");
        assert_eq!(human_bytes(1536 * 1024 * 1024), "1.5 GiB");
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(bytes in 1u64..(1u64 << 62)) {
            prop_assert_eq!(parse_bytes(&format_bytes(bytes)), Ok(bytes));
        }
    }
}
