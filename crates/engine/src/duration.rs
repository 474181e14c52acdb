//! Durations as Ferry's resources write them: `45s`, `90m`, `1h30m`, `7d`.

/// Seconds in `text`; `None` when it is not such a duration (empty, an unknown unit, a number
/// without a unit).
pub fn seconds(text: &str) -> Option<i64> {
    let mut total: i64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        let value = number.parse::<i64>().ok()?;
        total = total.saturating_add(value.saturating_mul(unit));
        number.clear();
    }
    (number.is_empty() && !text.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn durations_add_up_their_parts() {
        assert_eq!(seconds("45s"), Some(45));
        assert_eq!(seconds("1h30m"), Some(5400));
        assert_eq!(seconds("7d"), Some(604_800));
        for bad in ["", "10", "h", "5w", "1.5h", "-1h"] {
            assert_eq!(seconds(bad), None, "{bad}");
        }
    }
}
