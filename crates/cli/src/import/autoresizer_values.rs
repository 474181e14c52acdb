//! pvc-autoresizer's values in Ferry's terms. It speaks of free space (grow when less than 10%
//! is free), Ferry of used space (grow when at least 90% is used); it takes fractions of a
//! percent, Ferry whole percents. Each value is read as pvc-autoresizer reads it: one it cannot
//! read makes it skip the claim altogether, so such a claim is not imported.

use ferry_api::{format_bytes, parse_bytes};

/// A value as pvc-autoresizer reads it: `12.5%` (trailing `%` signs dropped), else a quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    Percent(f64),
    Bytes(u64),
}

/// A percent between 0 and 100, or a positive quantity where `quantity_allowed`.
pub fn amount(text: &str, quantity_allowed: bool) -> Result<Amount, String> {
    if text.ends_with('%') {
        let number = text.trim_end_matches('%');
        let percent: f64 = number.parse().map_err(|_| format!("{text:?} is not a percent"))?;
        if !(0.0..=100.0).contains(&percent) {
            return Err(format!("{text:?} is not between 0% and 100%"));
        }
        return Ok(Amount::Percent(percent));
    }
    if !quantity_allowed {
        return Err(format!(
            "{text:?} is not a percent (pvc-autoresizer takes only percents here)"
        ));
    }
    parse_bytes(text)
        .map(Amount::Bytes)
        .map_err(|error| format!("{text:?}: {error}"))
}

/// Ferry's threshold (percent used, 1 to 99) for pvc-autoresizer's free-space threshold, on a
/// volume of `size` bytes where it is a quantity; and a note where it is not exact. Rounded
/// down: Ferry grows a little earlier rather than later.
pub fn used_threshold(free: Amount, size: Option<u64>, what: &str) -> Result<(i32, Option<String>), String> {
    let free_percent = match free {
        Amount::Percent(percent) => percent,
        Amount::Bytes(bytes) => {
            let size = size.filter(|s| *s > 0).ok_or_else(|| {
                format!(
                    "{what} is {} of free space, and the volume's size is not known",
                    format_bytes(bytes)
                )
            })?;
            bytes as f64 * 100.0 / size as f64
        }
    };
    let used = 100.0 - free_percent;
    let whole = (used.floor() as i32).clamp(1, 99);
    let note = match free {
        Amount::Bytes(bytes) => Some(format!(
            "{what}: {} free on today's {} is {whole}% used; Ferry's threshold is a percent, so \
             it stays {whole}% as the volume grows (pvc-autoresizer kept {} free whatever the size)",
            format_bytes(bytes),
            size.map(format_bytes).unwrap_or_default(),
            format_bytes(bytes)
        )),
        Amount::Percent(_) if f64::from(whole) != used => Some(format!(
            "{what}: {free_percent}% free is {used}% used; Ferry takes whole percents (1 to 99): {whole}%"
        )),
        Amount::Percent(_) => None,
    };
    Ok((whole, note))
}

/// Ferry's increase (`N%` or the quantity) for pvc-autoresizer's, and a note where it is not exact.
pub fn increase(amount: Amount, text: &str) -> Result<(String, Option<String>), String> {
    match amount {
        Amount::Bytes(_) => Ok((text.to_string(), None)),
        Amount::Percent(percent) if percent <= 0.0 => Err(format!(
            "{text:?} adds nothing (pvc-autoresizer never grows such a claim)"
        )),
        Amount::Percent(percent) => {
            let whole = percent.ceil();
            let note = (whole != percent)
                .then(|| format!("increase {percent}%: Ferry takes whole percents: {whole}%"));
            Ok((format!("{whole}%"), note))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: u64 = 1 << 30;

    #[test]
    fn values_read_as_pvc_autoresizer_reads_them() {
        assert_eq!(amount("20%", true), Ok(Amount::Percent(20.0)));
        assert_eq!(amount("12.5%%", false), Ok(Amount::Percent(12.5)));
        assert_eq!(amount("5Gi", true), Ok(Amount::Bytes(5 * GI)));
        assert!(amount("5Gi", false).is_err(), "inodes: percents only");
        for bad in ["150%", "-1%", "x%", "0", "-5Gi", "lots"] {
            assert!(amount(bad, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn free_space_becomes_used_space_in_whole_percents() {
        assert_eq!(used_threshold(Amount::Percent(10.0), None, "t"), Ok((90, None)));
        let (used, note) = used_threshold(Amount::Percent(12.5), None, "t").unwrap();
        assert_eq!(used, 87, "rounded to grow earlier, not later");
        assert!(note.unwrap().contains("87.5% used"));
        // Nothing free never triggers in pvc-autoresizer; Ferry's nearest is 99%.
        assert_eq!(used_threshold(Amount::Percent(0.0), None, "t").unwrap().0, 99);
        assert_eq!(used_threshold(Amount::Percent(100.0), None, "t").unwrap().0, 1);
        // A quantity of free space, on the volume's size today.
        let (used, note) = used_threshold(Amount::Bytes(5 * GI), Some(100 * GI), "t").unwrap();
        assert_eq!(used, 95);
        assert!(note.unwrap().contains("5Gi free on today's 100Gi is 95% used"));
        assert!(used_threshold(Amount::Bytes(GI), None, "t").is_err());
    }

    #[test]
    fn increases_keep_their_quantity_or_round_their_percent_up() {
        assert_eq!(increase(Amount::Percent(10.0), "10%"), Ok(("10%".into(), None)));
        let (step, note) = increase(Amount::Percent(7.5), "7.5%").unwrap();
        assert_eq!(step, "8%");
        assert!(note.is_some());
        assert_eq!(increase(Amount::Bytes(GI), "1Gi"), Ok(("1Gi".into(), None)));
        assert!(increase(Amount::Percent(0.0), "0%").is_err());
    }
}
