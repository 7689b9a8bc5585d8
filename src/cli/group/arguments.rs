//! Arguments of `pinlog group`: `TOPIC[:PARTITIONS]` specs and the dates
//! `--to-datetime` takes.

/// `--topic TOPIC` or `--topic TOPIC:P,P,...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub topic: String,
    /// `None`: every partition of the topic.
    pub partitions: Option<Vec<i32>>,
}

pub fn parse_topic_spec(s: &str) -> Result<TopicSpec, String> {
    let (topic, parts) = match s.split_once(':') {
        Some((t, p)) => (t, Some(p)),
        None => (s, None),
    };
    if topic.is_empty() {
        return Err(format!("{s:?} names no topic"));
    }
    let partitions = match parts {
        None => None,
        Some(p) => {
            let mut list = Vec::new();
            for item in p.split(',') {
                let n: i32 = item
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        format!("{item:?} in {s:?} is not a partition number (TOPIC:0,1,2)")
                    })?;
                if !list.contains(&n) {
                    list.push(n);
                }
            }
            list.sort_unstable();
            Some(list)
        }
    };
    Ok(TopicSpec {
        topic: topic.to_string(),
        partitions,
    })
}

/// Parses an ISO 8601 time into milliseconds since the Unix epoch:
/// `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM[:SS[.fff]]` followed by `Z`,
/// `±HH:MM` or `±HHMM`. A time without a zone is UTC (unlike Kafka's tool,
/// which takes the machine's zone: a plan should not depend on where it is
/// run).
pub fn parse_datetime_ms(s: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "{s:?} is not an ISO 8601 time such as 2024-05-01T12:00:00Z, \
             2024-05-01T14:00:00.000+02:00 or 2024-05-01"
        )
    };
    let s = s.trim();
    let (date, rest) = match s.split_once(['T', 't', ' ']) {
        Some((d, r)) => (d, Some(r)),
        None => (s, None),
    };
    let num = |t: &str, digits: usize| -> Result<i64, String> {
        if t.len() != digits || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse().map_err(|_| bad())
    };
    let mut d = date.split('-');
    let (Some(y), Some(mo), Some(da), None) = (d.next(), d.next(), d.next(), d.next()) else {
        return Err(bad());
    };
    let (year, month, day) = (num(y, 4)?, num(mo, 2)?, num(da, 2)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(bad());
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    let Some(rest) = rest else { return Ok(ms) };

    // Split the zone off the time of day.
    let (time, zone_ms) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, z) = rest.split_at(i);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let z = z[1..].replace(':', "");
        if z.len() != 4 {
            return Err(bad());
        }
        let (zh, zm) = (num(&z[..2], 2)?, num(&z[2..], 2)?);
        if zh > 23 || zm > 59 {
            return Err(bad());
        }
        (t, sign * (zh * 3_600_000 + zm * 60_000))
    } else {
        (rest, 0)
    };
    let (hms, fraction) = match time.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (time, None),
    };
    let mut parts = hms.split(':');
    let hour = num(parts.next().ok_or_else(bad)?, 2)?;
    let minute = num(parts.next().ok_or_else(bad)?, 2)?;
    let second = match parts.next() {
        Some(p) => num(p, 2)?,
        None => 0,
    };
    if parts.next().is_some() || hour > 23 || minute > 59 || second > 59 {
        return Err(bad());
    }
    let millis = match fraction {
        None => 0,
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            // Keep milliseconds; finer digits are dropped.
            let padded = format!("{f:0<3}");
            padded[..3].parse::<i64>().map_err(|_| bad())?
        }
        Some(_) => return Err(bad()),
    };
    ms += hour * 3_600_000 + minute * 60_000 + second * 1000 + millis;
    Ok(ms - zone_ms)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
