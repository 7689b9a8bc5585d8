//! Latency-by-percentile plots as hand-written SVG, in the style of
//! HdrHistogram's plotter: the x axis is 1/(1-p) on a log scale, so 90%,
//! 99%, 99.9%... are evenly spaced and the tail gets the room it deserves;
//! the y axis is latency. Several `.hgrm` files are overlaid, one line each.

use std::fmt::Write as _;
use std::path::Path;

/// Plot area and margins, in SVG user units.
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 540.0;
const MARGIN_LEFT: f64 = 80.0;
const MARGIN_RIGHT: f64 = 50.0;
const MARGIN_TOP: f64 = 50.0;
const MARGIN_BOTTOM: f64 = 60.0;
/// The x axis always reaches at least 99.9% and at most 99.99999%.
const X_DECADES_MIN: u32 = 3;
const X_DECADES_MAX: u32 = 7;
/// Horizontal grid lines on the latency axis, about.
const Y_TICKS: f64 = 6.0;
/// Line colours, cycled (ColorBrewer's Dark2, readable on white).
const COLOURS: [&str; 8] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
];

/// One run: its name and its (value, percentile) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Reads the percentile lines of a `.hgrm` file: `value percentile
/// count [1/(1-p)]`; headers, blank lines and `#` footers are skipped.
pub fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            let value: f64 = cols.next()?.parse().ok()?;
            let percentile: f64 = cols.next()?.parse().ok()?;
            (0.0..=1.0)
                .contains(&percentile)
                .then_some((value, percentile))
        })
        .collect()
}

pub fn load(path: &Path) -> std::io::Result<Series> {
    let text = std::fs::read_to_string(path)?;
    let points = parse_hgrm(&text);
    if points.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} has no percentile lines", path.display()),
        ));
    }
    let name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok(Series { name, points })
}

/// log10 of 1/(1-p), the plot's x coordinate, capped for p = 1.
fn x_of(p: f64) -> f64 {
    let tail = (1.0 - p).max(10f64.powi(-(X_DECADES_MAX as i32)));
    -tail.log10()
}

/// A "nice" step (1, 2 or 5 times a power of ten) for about `ticks` steps
/// up to `max`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// "90%", "99.9%" for decade `d` of the x axis (d = 0 is 0%).
fn decade_label(d: u32) -> String {
    if d == 0 {
        return "0%".to_string();
    }
    let p = 100.0 * (1.0 - 10f64.powi(-(d as i32)));
    format!("{:.*}%", d.saturating_sub(2) as usize, p)
}

/// Draws the series into an SVG document.
pub fn svg(series: &[Series], title: &str, y_label: &str) -> String {
    let max_x = series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|(_, p)| *p < 1.0)
        .map(|(_, p)| x_of(*p))
        .fold(0.0, f64::max);
    let decades = (max_x.ceil() as u32).clamp(X_DECADES_MIN, X_DECADES_MAX);
    let max_y = series
        .iter()
        .flat_map(|s| &s.points)
        .map(|(v, _)| *v)
        .fold(0.0, f64::max);
    let step = nice_step(if max_y > 0.0 { max_y } else { 1.0 }, Y_TICKS);
    let top_y = (max_y / step).ceil().max(1.0) * step;

    let plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM;
    let px = |x: f64| MARGIN_LEFT + plot_w * (x / decades as f64).min(1.0);
    let py = |y: f64| MARGIN_TOP + plot_h * (1.0 - y / top_y);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="28" text-anchor="middle" font-size="16">{}</text>"#,
        WIDTH / 2.0,
        xml(title)
    );
    // Grid and labels: x decades.
    for d in 0..=decades {
        let x = px(d as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{MARGIN_TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            MARGIN_TOP + plot_h
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            MARGIN_TOP + plot_h + 18.0,
            decade_label(d)
        );
    }
    // Grid and labels: y steps.
    let mut y = 0.0;
    while y <= top_y + step / 2.0 {
        let yy = py(y);
        let _ = writeln!(
            s,
            r##"<line x1="{MARGIN_LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/>"##,
            MARGIN_LEFT + plot_w
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            MARGIN_LEFT - 6.0,
            yy + 4.0,
            trim_number(y)
        );
        y += step;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile</text>"#,
        MARGIN_LEFT + plot_w / 2.0,
        HEIGHT - 15.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(20,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        MARGIN_TOP + plot_h / 2.0,
        xml(y_label)
    );
    // One polyline per run, and a legend entry.
    for (i, run) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut pts = String::new();
        for (v, p) in &run.points {
            let _ = write!(pts, "{:.1},{:.1} ", px(x_of(*p)), py(*v));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            pts.trim_end()
        );
        let ly = MARGIN_TOP + 16.0 + 18.0 * i as f64;
        let lx = MARGIN_LEFT + 14.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/>"#,
            lx + 24.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            lx + 30.0,
            ly + 4.0,
            xml(&run.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn trim_number(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Text escaped for XML content and attributes.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::write_hgrm;
    use crate::stats::new_histogram;

    #[test]
    fn hgrm_round_trips_into_points() {
        let mut h = new_histogram();
        for v in 1..=100_000u64 {
            h.record(v).unwrap();
        }
        let mut out = Vec::new();
        write_hgrm(&h, &mut out).unwrap();
        let points = parse_hgrm(&String::from_utf8(out).unwrap());
        assert!(points.len() > 50);
        assert_eq!(points.first().unwrap().1, 0.0);
        assert_eq!(points.last().unwrap().1, 1.0);
        assert!(points
            .windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].0 <= w[1].0));
    }

    #[test]
    fn axis_labels_and_steps() {
        assert_eq!(decade_label(0), "0%");
        assert_eq!(decade_label(1), "90%");
        assert_eq!(decade_label(2), "99%");
        assert_eq!(decade_label(3), "99.9%");
        assert_eq!(decade_label(5), "99.999%");
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(7.0, 6.0), 2.0);
        assert_eq!(nice_step(0.3, 6.0), 0.05);
        assert!((x_of(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(x_of(1.0), X_DECADES_MAX as f64);
    }

    #[test]
    fn svg_overlays_every_series() {
        let a = Series {
            name: "pinlog".into(),
            points: vec![(0.1, 0.0), (0.2, 0.9), (1.5, 0.999), (2.0, 1.0)],
        };
        let b = Series {
            name: "kafka <4.4>".into(),
            points: vec![(0.3, 0.0), (3.0, 0.99), (9.0, 1.0)],
        };
        let doc = svg(&[a, b], "P2 & friends", "latency (ms)");
        assert!(doc.starts_with("<svg"));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches("<polyline").count(), 2);
        assert!(doc.contains("kafka &lt;4.4&gt;"));
        assert!(doc.contains("P2 &amp; friends"));
        assert!(doc.contains(">99.9%<"));
    }
}
