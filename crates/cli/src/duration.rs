//! Durations on the command line as kubectl takes them: Go's form (`500ms`, `30s`, `1m30s`,
//! `1.5h`), read by jiff's parser, and a bare number of seconds (`30`, `0.5`) as the flags took
//! before.

use std::time::Duration;

/// `text` as a duration, or a message naming what would be one.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let refused = || format!("{text:?} is not a duration: give one such as 500ms, 30s, 1m30s or 2h");
    let seconds = match text.parse::<f64>() {
        Ok(seconds) => seconds,
        Err(_) => text
            .trim()
            .parse::<jiff::SignedDuration>()
            .map_err(|_| refused())?
            .as_secs_f64(),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(refused());
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| refused())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectl_writes_them() {
        let ms = Duration::from_millis;
        for (text, expected) in [
            ("500ms", ms(500)),
            ("30s", ms(30_000)),
            ("1m30s", ms(90_000)),
            ("1.5h", ms(5_400_000)),
            ("2h45m", ms(9_900_000)),
            ("0", ms(0)),
            ("30", ms(30_000)),
            ("0.2", ms(200)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text:?}");
        }
        for bad in ["", "soon", "-1s", "-3", "1d", "NaN", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
