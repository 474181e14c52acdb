//! Aligned columns like `kubectl get`, colored per cell after padding so alignment holds.

use crate::style::{NONE, Paint, Style};

#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<(String, Paint)>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row of (text, how it is shown; [`NONE`] for plain).
    pub fn row(&mut self, cells: Vec<(String, Paint)>) {
        self.rows.push(cells);
    }

    /// Adds a row of plain cells.
    pub fn plain_row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows
            .push(cells.into_iter().map(|c| (c.into(), NONE)).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self, style: Style) -> String {
        self.render_indented(style, "")
    }

    pub fn render_indented(&self, style: Style, indent: &str) -> String {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0; columns];
        for (i, h) in self.header.iter().enumerate() {
            widths[i] = widths[i].max(h.chars().count());
        }
        for row in &self.rows {
            for (i, (text, _)) in row.iter().enumerate() {
                widths[i] = widths[i].max(text.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<(&str, Paint)>, out: &mut String| {
            let last = cells.len().saturating_sub(1);
            let mut text = String::from(indent);
            for (i, (cell, color)) in cells.into_iter().enumerate() {
                let pad = if i == last {
                    String::new()
                } else {
                    " ".repeat(widths[i] - cell.chars().count() + 3)
                };
                text.push_str(&style.paint(color, cell));
                text.push_str(&pad);
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        if !self.header.is_empty() {
            line(self.header.iter().map(|h| (h.as_str(), NONE)).collect(), &mut out);
        }
        for row in &self.rows {
            line(row.iter().map(|(t, c)| (t.as_str(), *c)).collect(), &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut table = Table::new(["NAME", "PHASE"]);
        table.plain_row(["a-long-name", "Running"]);
        table.plain_row(["b", "Failed"]);
        assert_eq!(
            table.render(Style::PLAIN),
            "NAME          PHASE\na-long-name   Running\nb             Failed\n"
        );
    }

    #[test]
    fn colors_keep_alignment() {
        let mut table = Table::new(["A", "B"]);
        table.row(vec![("x".into(), crate::style::RED), ("y".into(), NONE)]);
        let out = table.render(Style { color: true });
        assert_eq!(out, "A   B\n\x1b[31mx\x1b[0m   y\n");
    }
}
