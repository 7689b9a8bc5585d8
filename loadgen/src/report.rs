//! The final report (text or one JSON object), the live progress line, and
//! the `.hgrm` percentile distribution.
//!
//! MB here is 2^20 bytes, as Kafka's ProducerPerformance and
//! ConsumerPerformance count it, so their figures compare directly.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use hdrhistogram::Histogram;

use crate::constants::{HGRM_TICKS_PER_HALF_DISTANCE, HGRM_UNIT_SCALE, HISTOGRAM_SIGFIGS};
use crate::error::error_name;

const MIB: f64 = 1024.0 * 1024.0;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
    pub mean: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
            mean: h.mean(),
        }
    }

    fn json(&self) -> String {
        format!(
            "{{\"p50\":{},\"p90\":{},\"p99\":{},\"p999\":{},\"p9999\":{},\"max\":{},\"mean\":{:.1},\"count\":{}}}",
            self.p50, self.p90, self.p99, self.p999, self.p9999, self.max, self.mean, self.count
        )
    }

    fn text(&self) -> String {
        if self.count == 0 {
            return "no samples".to_string();
        }
        format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}",
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.p999),
            ms(self.p9999),
            ms(self.max)
        )
    }
}

/// Microseconds as milliseconds with three decimals.
pub fn ms(us: u64) -> String {
    format!("{:.3} ms", us as f64 / 1000.0)
}

/// Everything the final report says.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub mode: &'static str,
    pub topic: String,
    pub records: u64,
    pub bytes: u64,
    pub duration_s: f64,
    pub errors: u64,
    pub warmup_records: u64,
    pub wire_bytes: u64,
    pub requests: u64,
    /// What `latency` measures: "produce" (intended send to ack), "fetch"
    /// (fetch round trip) or "end_to_end" (intended send to consume).
    pub latency_kind: &'static str,
    pub latency: Percentiles,
    /// `e2e` only: producer side.
    pub produced: Option<u64>,
    pub produce_latency: Option<Percentiles>,
    /// The fatal error that ended the run early, if any.
    pub failure: Option<String>,
    pub error_codes: BTreeMap<i16, u64>,
    /// Settings echoed into the JSON, as (key, JSON value).
    pub settings: Vec<(&'static str, String)>,
}

impl Report {
    pub fn records_per_s(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.records as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn mb_per_s(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.bytes as f64 / MIB / self.duration_s
        } else {
            0.0
        }
    }

    pub fn json(&self) -> String {
        let mut s = String::from("{");
        let mut field = |k: &str, v: String| {
            if s.len() > 1 {
                s.push(',');
            }
            let _ = write!(s, "\"{k}\":{v}");
        };
        field("mode", json_str(self.mode));
        field("topic", json_str(&self.topic));
        field("records", self.records.to_string());
        field("bytes", self.bytes.to_string());
        field("duration_s", format!("{:.6}", self.duration_s));
        field("records_per_s", format!("{:.1}", self.records_per_s()));
        field("mb_per_s", format!("{:.3}", self.mb_per_s()));
        field("latency_kind", json_str(self.latency_kind));
        field("latency_us", self.latency.json());
        field("errors", self.errors.to_string());
        field("warmup_records", self.warmup_records.to_string());
        field("wire_bytes", self.wire_bytes.to_string());
        field("requests", self.requests.to_string());
        if let Some(p) = self.produced {
            field("produced", p.to_string());
            field("consumed", self.records.to_string());
        }
        if let Some(p) = &self.produce_latency {
            field("produce_latency_us", p.json());
        }
        let codes: Vec<String> = self
            .error_codes
            .iter()
            .map(|(c, n)| format!("\"{c}\":{n}"))
            .collect();
        field("error_codes", format!("{{{}}}", codes.join(",")));
        field(
            "failure",
            self.failure.as_deref().map_or("null".to_string(), json_str),
        );
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        field("settings", format!("{{{}}}", settings.join(",")));
        s.push('}');
        s
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "mode:        {} (topic {})", self.mode, self.topic);
        if let Some(p) = self.produced {
            let _ = writeln!(s, "produced:    {p}");
        }
        let _ = writeln!(s, "records:     {}", self.records);
        let _ = writeln!(s, "bytes:       {} (record values)", self.bytes);
        let _ = writeln!(s, "seconds:     {:.3}", self.duration_s);
        let _ = writeln!(s, "records/s:   {:.0}", self.records_per_s());
        let _ = writeln!(s, "MB/s:        {:.2}", self.mb_per_s());
        let _ = writeln!(
            s,
            "latency:     {} ({})",
            self.latency.text(),
            self.latency_kind
        );
        if let Some(p) = &self.produce_latency {
            let _ = writeln!(s, "produce:     {} (produce)", p.text());
        }
        let _ = writeln!(s, "warmup:      {} records", self.warmup_records);
        let _ = write!(s, "errors:      {}", self.errors);
        for (code, n) in &self.error_codes {
            let _ = write!(s, "  [{} x{n}]", error_name(*code));
        }
        s.push('\n');
        if let Some(f) = &self.failure {
            let _ = writeln!(s, "FAILED:      {f} (results above are partial)");
        }
        s
    }
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes HdrHistogram's classic percentile distribution (the `.hgrm`
/// text of `outputPercentileDistribution`), values in milliseconds.
pub fn write_hgrm(h: &Histogram<u64>, out: &mut impl Write) -> std::io::Result<()> {
    let p = HISTOGRAM_SIGFIGS as usize;
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(HGRM_TICKS_PER_HALF_DISTANCE) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / HGRM_UNIT_SCALE;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                writeln!(
                    out,
                    "{value:>12.p$} {q:>2.12} {total:>10} {:>14.2}",
                    1.0 / (1.0 - q)
                )?;
            } else {
                writeln!(out, "{value:>12.p$} {q:>2.12} {total:>10}")?;
            }
        }
    }
    let (mean, stdev, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (
            h.mean() / HGRM_UNIT_SCALE,
            h.stdev() / HGRM_UNIT_SCALE,
            h.max() as f64 / HGRM_UNIT_SCALE,
        )
    };
    writeln!(
        out,
        "#[Mean    = {mean:>12.p$}, StdDeviation   = {stdev:>12.p$}]"
    )?;
    writeln!(
        out,
        "#[Max     = {max:>12.p$}, Total count    = {:>12}]",
        h.len()
    )?;
    writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_bucket_count()
    )?;
    Ok(())
}

/// HdrHistogram's sub-bucket count for our precision: the power of two at
/// or above 2 * 10^sigfigs.
fn sub_bucket_count() -> u64 {
    (2 * 10u64.pow(HISTOGRAM_SIGFIGS as u32)).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn json_has_the_required_keys_and_escapes() {
        let r = Report {
            mode: "produce",
            topic: "t\"x".into(),
            records: 10,
            bytes: 10 * 1024 * 1024,
            duration_s: 2.0,
            latency_kind: "produce",
            failure: Some("broker\ngone".into()),
            settings: vec![("acks", "1".into())],
            ..Default::default()
        };
        let j = r.json();
        for key in [
            "\"records\":10",
            "\"bytes\":",
            "\"duration_s\":",
            "\"records_per_s\":5.0",
            "\"mb_per_s\":5.000",
            "\"latency_us\":{\"p50\":0,\"p90\":0,\"p99\":0,\"p999\":0,\"p9999\":0,\"max\":0",
            "\"errors\":0",
            "\"topic\":\"t\\\"x\"",
            "\"failure\":\"broker\\ngone\"",
            "\"settings\":{\"acks\":1}",
        ] {
            assert!(j.contains(key), "{key} missing from {j}");
        }
        assert!(j.starts_with('{') && j.ends_with('}'));
        assert!(!j.contains('\n'));
    }

    #[test]
    fn hgrm_has_the_classic_layout() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let mut out = Vec::new();
        write_hgrm(&h, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        // First line: the minimum (1 us = 0.001 ms) at percentile 0.
        let first: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(first, ["0.001", "0.000000000000", "1", "1.00"]);
        let last_data = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
        let cols: Vec<&str> = last_data.split_whitespace().collect();
        assert_eq!(cols.len(), 3, "the 100% line has no 1/(1-p): {last_data}");
        assert_eq!(cols[1], "1.000000000000");
        assert_eq!(cols[2], "10000");
        assert!(
            text.contains("#[Max     =       10.007, Total count    =        10000]"),
            "{text}"
        );
        assert!(text.contains("SubBuckets     =         2048]"));
    }
}
