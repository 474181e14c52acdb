//! When a volume will be full at the rate it fills: the fullest replica's bytes in use, sampled
//! into status at most every [`SAMPLE_SPACING_SECONDS`] (the last [`SAMPLES_KEPT`], about an hour),
//! and the line from the oldest sample to this poll's reading. No prediction while the span is
//! shorter than one spacing (too noisy) or the volume does not fill.

use super::Reading;

/// Least time between two samples kept in status.
pub const SAMPLE_SPACING_SECONDS: i64 = 600;
/// Samples kept (with the spacing: the last hour or so).
pub const SAMPLES_KEPT: usize = 7;

/// One sample: when, and the fullest replica's bytes in use.
pub type Sample = (i64, u64);

/// The fullest replica's reading (by bytes in use), if any was read.
fn fullest(readings: &[Reading]) -> Option<&Reading> {
    readings.iter().max_by_key(|reading| reading.used_bytes)
}

/// The samples to keep after this poll: `previous`, with this poll's fullest reading added when
/// the newest is a spacing old (or there is none), the oldest dropped beyond [`SAMPLES_KEPT`].
pub fn sampled(previous: &[Sample], readings: &[Reading], now: i64) -> Vec<Sample> {
    let mut samples = previous.to_vec();
    if let Some(reading) = fullest(readings)
        && samples
            .last()
            .is_none_or(|(at, _)| now - at >= SAMPLE_SPACING_SECONDS)
    {
        samples.push((now, reading.used_bytes));
    }
    samples.split_off(samples.len().saturating_sub(SAMPLES_KEPT))
}

/// When the fullest replica's volume would be full, at the rate from the oldest sample to now.
pub fn full_at(samples: &[Sample], readings: &[Reading], now: i64) -> Option<i64> {
    let reading = fullest(readings)?;
    let &(since, used_then) = samples.first()?;
    let span = now - since;
    if span < SAMPLE_SPACING_SECONDS || reading.used_bytes <= used_then {
        return None;
    }
    let rate = (reading.used_bytes - used_then) as f64 / span as f64;
    let left = reading.capacity_bytes.saturating_sub(reading.used_bytes) as f64;
    let seconds = (left / rate).ceil();
    // Beyond a century says nothing useful.
    (seconds < 100.0 * 365.0 * 86_400.0).then(|| now + seconds as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: u64 = 1 << 20;

    fn used(bytes: u64) -> Vec<Reading> {
        vec![
            Reading {
                replica: 0,
                used_bytes: bytes / 2,
                capacity_bytes: 1000 * MI,
                inodes: None,
            },
            Reading {
                replica: 1,
                used_bytes: bytes,
                capacity_bytes: 1000 * MI,
                inodes: None,
            },
        ]
    }

    #[test]
    fn a_sample_is_kept_per_spacing_and_the_oldest_go() {
        let mut samples = Vec::new();
        for poll in 0..200 {
            samples = sampled(&samples, &used(poll * MI), poll as i64 * 60);
        }
        assert_eq!(samples.len(), SAMPLES_KEPT);
        let spacings: Vec<i64> = samples.windows(2).map(|pair| pair[1].0 - pair[0].0).collect();
        assert!(
            spacings.iter().all(|gap| *gap == SAMPLE_SPACING_SECONDS),
            "{spacings:?}"
        );
        assert_eq!(samples.last().unwrap().1, 190 * MI, "the fullest replica's");
        assert_eq!(sampled(&samples, &[], 99_999), samples, "no reading, no sample");
    }

    #[test]
    fn a_volume_filling_at_a_steady_rate_is_full_when_the_line_says() {
        // 100 MiB at 0, 200 MiB an hour later: 800 MiB left at 100 MiB/h is 8 h.
        let samples = vec![(0, 100 * MI)];
        assert_eq!(full_at(&samples, &used(200 * MI), 3600), Some(3600 + 8 * 3600));
    }

    #[test]
    fn no_prediction_too_soon_or_while_it_does_not_fill() {
        assert_eq!(
            full_at(&[(0, 100 * MI)], &used(150 * MI), 300),
            None,
            "5 minutes is noise"
        );
        assert_eq!(full_at(&[(0, 100 * MI)], &used(90 * MI), 3600), None, "emptying");
        assert_eq!(full_at(&[], &used(90 * MI), 3600), None);
        assert_eq!(full_at(&[(0, 100 * MI)], &[], 3600), None);
    }
}
