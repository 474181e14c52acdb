//! The standard process metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`, ...,
//! named and defined as every official Prometheus client exports them), read from `/proc/self` at
//! each scrape. prometheus-client has no such collector; the parsing is pure and tested apart.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Linux reports CPU times in /proc in USER_HZ ticks, 100 per second on every architecture Ferry
/// is built for (x86_64, aarch64).
const TICKS_PER_SECOND: f64 = 100.0;

/// One reading of the process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub threads: i64,
    pub virtual_memory_bytes: i64,
    pub resident_memory_bytes: i64,
    pub start_time_seconds: f64,
    pub open_fds: i64,
    pub max_fds: i64,
}

/// From `/proc/self/stat`, `/proc/self/status`, `/proc/self/limits` and the `btime` line of
/// `/proc/stat`; `None` when one of them does not have the expected shape.
pub fn parse(
    stat: &str,
    status: &str,
    limits: &str,
    system_stat: &str,
    open_fds: i64,
) -> Option<ProcessStats> {
    // The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // fields[0] is field 3 (state): field n is fields[n - 3].
    let field = |n: usize| fields.get(n - 3).and_then(|value| value.parse::<f64>().ok());
    let boot_time: f64 = system_stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let resident_kib: i64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let max_fds = limits
        .lines()
        .find_map(|line| line.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .unwrap_or(-1); // "unlimited"
    Some(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) / TICKS_PER_SECOND,
        threads: field(20)? as i64,
        start_time_seconds: boot_time + field(22)? / TICKS_PER_SECOND,
        virtual_memory_bytes: field(23)? as i64,
        resident_memory_bytes: resident_kib * 1024,
        open_fds,
        max_fds,
    })
}

/// This process now, or `None` off Linux or when /proc cannot be read.
pub fn read() -> Option<ProcessStats> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as i64;
    parse(
        &read("/proc/self/stat")?,
        &read("/proc/self/status")?,
        &read("/proc/self/limits")?,
        &read("/proc/stat")?,
        open_fds,
    )
}

/// Encodes [`read`] at each scrape; nothing when it cannot be read.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(stats.cpu_seconds);
        // (A counter's samples get `_total` from the encoder: the family is `process_cpu_seconds`.)
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges: [(&str, &str, i64); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                stats.resident_memory_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                stats.virtual_memory_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                stats.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                stats.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                stats.threads,
            ),
        ];
        for (name, help, value) in gauges {
            ConstGauge::new(value).encode(encoder.encode_descriptor(
                name,
                help,
                None,
                MetricType::Gauge,
            )?)?;
        }
        let start = ConstGauge::new(stats.start_time_seconds);
        start.encode(encoder.encode_descriptor(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            None,
            MetricType::Gauge,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (ferry (op) x) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 130 0 0 20 0 7 0 360000 104857600 4000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn the_proc_files_are_read_as_prometheus_defines_the_metrics() {
        let status = "Name:\tferry\nVmHWM:\t   20480 kB\nVmRSS:\t   16384 kB\nThreads:\t7\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\n";
        let system = "cpu  1 2 3\nbtime 1764230400\nprocesses 9\n";
        let stats = parse(STAT, status, limits, system, 12).unwrap();
        assert_eq!(
            stats,
            ProcessStats {
                cpu_seconds: 3.8,
                threads: 7,
                virtual_memory_bytes: 104_857_600,
                resident_memory_bytes: 16 << 20,
                start_time_seconds: 1_764_230_400.0 + 3600.0,
                open_fds: 12,
                max_fds: 1_048_576,
            }
        );
        let unlimited = limits.replace("1048576              1048576", "unlimited            unlimited");
        assert_eq!(parse(STAT, status, &unlimited, system, 12).unwrap().max_fds, -1);
        assert_eq!(parse("garbage", status, limits, system, 12), None);
        assert_eq!(parse(STAT, "Name:\tferry\n", limits, system, 12), None);
    }

    #[test]
    fn this_process_is_read_from_proc() {
        let stats = read().unwrap();
        assert!(stats.resident_memory_bytes > 1 << 20, "{stats:?}");
        assert!(
            stats.threads >= 1 && stats.open_fds >= 3 && stats.max_fds != 0,
            "{stats:?}"
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            stats.start_time_seconds > now - 3600.0 && stats.start_time_seconds <= now + 1.0,
            "{stats:?}"
        );
    }
}
