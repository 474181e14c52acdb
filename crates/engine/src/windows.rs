//! Maintenance windows: whether one is open at a moment, until when, or when the next opens. Each
//! window's days and opening time are read in its time zone (daylight saving time included: an
//! opening time that a clock change skips opens at the first moment after it).

use ferry_api::{MaintenanceWindow, Weekday};
use jiff::civil::Weekday as CivilWeekday;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// One window, read.
#[derive(Debug, Clone)]
pub struct Window {
    days: Vec<CivilWeekday>,
    hour: i8,
    minute: i8,
    duration_seconds: i64,
    zone: TimeZone,
}

/// Where a moment stands against the windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WindowState {
    /// No window is given: always open.
    #[default]
    Always,
    Open {
        closes_at: i64,
    },
    Closed {
        opens_at: i64,
    },
}

impl WindowState {
    pub fn is_open(self) -> bool {
        !matches!(self, WindowState::Closed { .. })
    }
}

/// The longest window: a week (longer would be always open).
const LONGEST_SECONDS: i64 = 7 * 86_400;

fn civil(day: Weekday) -> CivilWeekday {
    match day {
        Weekday::Mon => CivilWeekday::Monday,
        Weekday::Tue => CivilWeekday::Tuesday,
        Weekday::Wed => CivilWeekday::Wednesday,
        Weekday::Thu => CivilWeekday::Thursday,
        Weekday::Fri => CivilWeekday::Friday,
        Weekday::Sat => CivilWeekday::Saturday,
        Weekday::Sun => CivilWeekday::Sunday,
    }
}

/// The windows as given, or why one cannot be used (the words name it by its place).
pub fn parse(windows: &[MaintenanceWindow]) -> Result<Vec<Window>, String> {
    windows
        .iter()
        .enumerate()
        .map(|(index, window)| {
            let at = format!("maintenanceWindows[{index}]");
            let (hour, minute) = window
                .start
                .split_once(':')
                .and_then(|(h, m)| Some((h.parse::<i8>().ok()?, m.parse::<i8>().ok()?)))
                .filter(|(h, m)| (0..24).contains(h) && (0..60).contains(m))
                .ok_or_else(|| format!("{at}.start must be a time such as 02:30, not {:?}", window.start))?;
            let duration_seconds = crate::duration::seconds(&window.duration)
                .filter(|seconds| (1..=LONGEST_SECONDS).contains(seconds))
                .ok_or_else(|| {
                    format!(
                        "{at}.duration must be a duration from 1s to 7d, not {:?}",
                        window.duration
                    )
                })?;
            let zone = match window.time_zone.as_deref() {
                None => TimeZone::UTC,
                Some(name) => TimeZone::get(name)
                    .map_err(|error| format!("{at}.timeZone {name:?} is not a known time zone: {error}"))?,
            };
            Ok(Window {
                days: window.days.iter().copied().map(civil).collect(),
                hour,
                minute,
                duration_seconds,
                zone,
            })
        })
        .collect()
}

/// The openings of `window` (Unix seconds) from a week before `now` to a week after.
fn openings(window: &Window, now: i64) -> Vec<i64> {
    let Ok(moment) = Timestamp::from_second(now) else {
        return Vec::new();
    };
    let today = moment.to_zoned(window.zone.clone()).date();
    (-8..=8)
        .filter_map(|offset: i64| today.checked_add(offset.days()).ok())
        .filter(|day| window.days.is_empty() || window.days.contains(&day.weekday()))
        .filter_map(|day| {
            day.at(window.hour, window.minute, 0, 0)
                .to_zoned(window.zone.clone())
                .ok()
        })
        .map(|opening| opening.timestamp().as_second())
        .collect()
}

/// Whether `now` is inside a window: open until the latest close of those it is in, or closed
/// until the next opening.
pub fn state(windows: &[Window], now: i64) -> WindowState {
    if windows.is_empty() {
        return WindowState::Always;
    }
    let mut closes_at: Option<i64> = None;
    let mut opens_at: Option<i64> = None;
    for window in windows {
        for opening in openings(window, now) {
            let closing = opening + window.duration_seconds;
            if opening <= now && now < closing {
                closes_at = closes_at.max(Some(closing));
            } else if opening > now {
                opens_at = Some(opens_at.map_or(opening, |at| at.min(opening)));
            }
        }
    }
    match (closes_at, opens_at) {
        (Some(closes_at), _) => WindowState::Open { closes_at },
        (None, Some(opens_at)) => WindowState::Closed { opens_at },
        // Every window of a week opens within it: unreachable but for an unreadable `now`.
        (None, None) => WindowState::Closed {
            opens_at: now + LONGEST_SECONDS,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(days: &[Weekday], start: &str, duration: &str, zone: Option<&str>) -> MaintenanceWindow {
        MaintenanceWindow {
            days: days.to_vec(),
            start: start.to_string(),
            duration: duration.to_string(),
            time_zone: zone.map(str::to_string),
        }
    }

    fn at(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_second()
    }

    #[test]
    fn a_daily_window_is_open_inside_and_says_when_it_opens_outside() {
        let windows = parse(&[window(&[], "02:00", "4h", None)]).unwrap();
        assert_eq!(
            state(&windows, at("2026-12-01T03:00:00Z")),
            WindowState::Open {
                closes_at: at("2026-12-01T06:00:00Z")
            }
        );
        assert_eq!(
            state(&windows, at("2026-12-01T06:00:00Z")),
            WindowState::Closed {
                opens_at: at("2026-12-02T02:00:00Z")
            }
        );
        assert_eq!(state(&[], 0), WindowState::Always);
    }

    #[test]
    fn days_and_time_zones_are_read_as_the_clock_on_the_wall() {
        // Saturday 22:00 in Berlin (UTC+1 in winter) for 4 h: open at 23:30 UTC Saturday.
        let windows = parse(&[window(&[Weekday::Sat], "22:00", "4h", Some("Europe/Berlin"))]).unwrap();
        // 2026-12-05 is a Saturday.
        assert_eq!(
            state(&windows, at("2026-12-05T23:30:00Z")),
            WindowState::Open {
                closes_at: at("2026-12-06T01:00:00Z")
            }
        );
        // On Tuesday it opens next Saturday.
        assert_eq!(
            state(&windows, at("2026-12-01T12:00:00Z")),
            WindowState::Closed {
                opens_at: at("2026-12-05T21:00:00Z")
            }
        );
        // In summer Berlin is UTC+2.
        assert_eq!(
            state(&windows, at("2026-07-01T12:00:00Z")),
            WindowState::Closed {
                opens_at: at("2026-07-04T20:00:00Z")
            }
        );
    }

    #[test]
    fn the_latest_close_of_overlapping_windows_counts() {
        let windows = parse(&[window(&[], "01:00", "2h", None), window(&[], "02:00", "3h", None)]).unwrap();
        assert_eq!(
            state(&windows, at("2026-12-01T02:30:00Z")),
            WindowState::Open {
                closes_at: at("2026-12-01T05:00:00Z")
            }
        );
    }

    #[test]
    fn bad_windows_say_which_and_why() {
        for (bad, says) in [
            (window(&[], "25:00", "1h", None), "maintenanceWindows[0].start"),
            (window(&[], "02:00", "8d", None), "maintenanceWindows[0].duration"),
            (
                window(&[], "02:00", "1h", Some("Mars/Olympus")),
                "not a known time zone",
            ),
        ] {
            let error = parse(&[bad]).unwrap_err();
            assert!(error.contains(says), "{error}");
        }
    }
}
