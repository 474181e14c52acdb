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

/// `seconds` written back the same way, largest units first: `1h30m`, `7d`, `0s`.
pub fn words(seconds: i64) -> String {
    let mut left = seconds.max(0);
    let mut text = String::new();
    for (unit, name) in [(86_400, 'd'), (3600, 'h'), (60, 'm'), (1, 's')] {
        if left >= unit {
            text.push_str(&format!("{}{name}", left / unit));
            left %= unit;
        }
    }
    if text.is_empty() { "0s".to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::{seconds, words};

    #[test]
    fn durations_are_written_as_they_are_read() {
        for text in ["45s", "1h30m", "7d", "0s", "1d2h3m4s"] {
            assert_eq!(words(seconds(text).unwrap()), text);
        }
    }

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
