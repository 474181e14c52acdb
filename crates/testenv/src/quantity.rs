//! Storage quantities in bytes, for the driver's comparisons.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Bytes of a storage quantity (`10Gi`, `1G`, `500Mi`); `None` when malformed.
pub fn bytes(quantity: &Quantity) -> Option<u64> {
    let text = quantity.0.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale: f64 = match suffix {
        "" => 1.0,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0_f64.powi(4),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    Some((value * scale).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_sizes() {
        assert_eq!(bytes(&Quantity("1Gi".into())), Some(1 << 30));
        assert_eq!(bytes(&Quantity("1G".into())), Some(1_000_000_000));
        assert_eq!(bytes(&Quantity("512".into())), Some(512));
        assert_eq!(bytes(&Quantity("x".into())), None);
    }
}
