//! Output of the operator commands: aligned text tables for people, JSON
//! for scripts.
//!
//! JSON goes through `serde_json` rather than a hand-written escaper: the
//! output must be valid JSON for every topic name, config value and client
//! id a broker can hold (control characters, quotes, non-ASCII), and
//! serde_json is the escaper every Rust JSON consumer already trusts. It
//! was already in the dependency graph (through the dev-dependencies), so
//! it adds no new code to audit.

use std::fmt::Write as _;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    /// For numbers, so that digits of equal weight line up.
    Right,
}

/// Spaces between two columns.
const COLUMN_GAP: usize = 2;

/// A table with a header row, rendered with every column as wide as its
/// widest cell. Cells are single-line; a newline in a cell is shown as
/// `\n` so that one row stays one line.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<&'static str>,
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&'static str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|(h, _)| *h).collect(),
            aligns: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; panics if it has a different number of cells than the
    /// header, which is a bug in the caller.
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(
            cells.len(),
            self.headers.len(),
            "a row of {} cells in a table of {} columns",
            cells.len(),
            self.headers.len()
        );
        self.rows
            .push(cells.into_iter().map(|c| one_line(&c)).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(width(cell));
            }
        }
        let mut out = String::new();
        let header: Vec<String> = self.headers.iter().map(|h| h.to_string()).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str(&" ".repeat(COLUMN_GAP));
                }
                let pad = " ".repeat(widths[i] - width(cell));
                match self.aligns[i] {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        out
    }
}

/// Display width, counted in characters (good enough for the names Kafka
/// allows, which are ASCII; client ids and hosts rarely are not).
fn width(s: &str) -> usize {
    s.chars().count()
}

fn one_line(s: &str) -> String {
    if s.contains(['\n', '\r', '\t']) {
        s.replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t")
    } else {
        s.to_string()
    }
}

/// A comma-separated list of numbers, as Kafka's tools print replica sets.
pub fn join_ids(ids: &[i32]) -> String {
    ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// `-` for an unknown offset or value, as kafka-consumer-groups prints it.
pub fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

/// A broker's error for one item of a command's JSON output: its code,
/// Kafka's name for it and its message; `null` when there was none.
pub fn error_json(e: &Option<(i16, Option<String>)>) -> serde_json::Value {
    match e {
        None => serde_json::Value::Null,
        Some((code, message)) => serde_json::json!({
            "code": code,
            "name": crate::cli::error::error_name(*code),
            "message": message,
        }),
    }
}

/// Pretty JSON with a trailing newline, for stdout.
pub fn json_text(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a Value always serialises");
    s.push('\n');
    s
}

/// Kafka's text form of a topic id: unpadded URL-safe base64 of the 16
/// bytes (`Uuid.toString()`), e.g. `AAAAAAAAAAAAAAAAAAAAAA` for zero.
pub fn topic_id_text(id: &[u8; 16]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(22);
    for chunk in id.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        // 3 bytes make 4 characters, 1 trailing byte makes 2.
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_trailing_spaces_are_trimmed() {
        let mut t = Table::new(&[
            ("TOPIC", Align::Left),
            ("PARTITIONS", Align::Right),
            ("NOTE", Align::Left),
        ]);
        t.row(vec!["orders".into(), "12".into(), "".into()]);
        t.row(vec!["a".into(), "3".into(), "x".into()]);
        assert_eq!(
            t.render(),
            "TOPIC   PARTITIONS  NOTE\n\
             orders          12\n\
             a                3  x\n"
        );
    }

    #[test]
    fn a_cell_never_breaks_a_row() {
        let mut t = Table::new(&[("A", Align::Left), ("B", Align::Left)]);
        t.row(vec!["x\ny".into(), "z".into()]);
        assert_eq!(t.render(), "A     B\nx\\ny  z\n");
    }

    #[test]
    fn an_empty_table_is_its_header() {
        let t = Table::new(&[("GROUP", Align::Left), ("STATE", Align::Left)]);
        assert!(t.is_empty());
        assert_eq!(t.render(), "GROUP  STATE\n");
    }

    #[test]
    #[should_panic(expected = "a row of 1 cells in a table of 2 columns")]
    fn a_short_row_is_a_bug() {
        Table::new(&[("A", Align::Left), ("B", Align::Left)]).row(vec!["x".into()]);
    }

    #[test]
    fn topic_ids_print_as_kafka_does() {
        assert_eq!(topic_id_text(&[0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        // Kafka: new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L).toString()
        let id = [
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54,
            0x32, 0x10,
        ];
        assert_eq!(topic_id_text(&id), "ASNFZ4mrze_-3LqYdlQyEA");
    }

    #[test]
    fn helpers() {
        assert_eq!(join_ids(&[1, 2, 3]), "1,2,3");
        assert_eq!(join_ids(&[]), "");
        assert_eq!(or_dash(Some(5)), "5");
        assert_eq!(or_dash(None::<i64>), "-");
        let v = serde_json::json!({"name": "a\"b\n"});
        let text = json_text(&v);
        assert!(text.ends_with("}\n"));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }
}
