//! The terminal layout: the seeds' fixed-width tables ("Number of threads"
//! over right-aligned columns, nested row labels, a legend under each).

use super::tables::{Row, Table};

fn width(s: &str) -> usize {
    s.chars().count()
}

fn label(r: &Row) -> String {
    format!("{}{}", "  ".repeat(r.indent), r.label)
}

/// One table as fixed-width text.
pub fn table(t: &Table) -> String {
    let label_w = t.rows.iter().map(|r| width(&label(r))).chain([width(&t.corner) + 1]).max().unwrap_or(0) + 2;
    let col_w: Vec<usize> = (0..t.columns.len())
        .map(|i| {
            t.rows
                .iter()
                .filter_map(|r| r.cells.get(i))
                .map(|c| width(&c.text))
                .chain([width(&t.columns[i])])
                .max()
                .unwrap_or(0)
                + 2
        })
        .collect();
    // A long last column (error texts) is left-aligned rather than padded.
    let last_free = t.column_caption.is_empty();
    let mut o = format!("{}\n\n", t.title);
    if !t.column_caption.is_empty() {
        o.push_str(&format!("{:label_w$}{}\n", "", t.column_caption));
    }
    let mut head = format!("{:label_w$}", "");
    for (i, c) in t.columns.iter().enumerate() {
        if last_free && i + 1 == t.columns.len() {
            head.push_str(&format!("  {c}"));
        } else {
            head.push_str(&format!("{c:>w$}", w = col_w[i]));
        }
    }
    o.push_str(head.trim_end());
    o.push('\n');
    o.push_str(&format!(" {}\n", t.corner));
    for r in &t.rows {
        let mut line = label(r);
        line.push_str(&" ".repeat(label_w.saturating_sub(width(&line))));
        for (i, c) in r.cells.iter().enumerate() {
            if last_free && i + 1 == r.cells.len() {
                line.push_str(&format!("  {}", c.text));
            } else {
                line.push_str(&format!("{:>w$}", c.text, w = col_w[i]));
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    if !t.legend.is_empty() {
        o.push('\n');
        for l in &t.legend {
            o.push_str(&format!(" {l}\n"));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tables::Cell;

    #[test]
    fn seeds_layout() {
        let cell = |s: &str| Cell { text: s.into(), note: None };
        let t = Table {
            title: "t".into(),
            corner: "sysbench test".into(),
            column_caption: "Number of threads".into(),
            columns: vec!["1".into(), "128".into()],
            rows: vec![
                Row { indent: 1, label: "select".into(), cells: vec![] },
                Row { indent: 2, label: "32 / off".into(), cells: vec![cell("-0.71"), cell("-19.68*")] },
            ],
            legend: vec!["(32/off*100)-100".into()],
        };
        let expected = [
            "t",
            "",
            "                Number of threads",
            "                      1      128",
            " sysbench test",
            "  select",
            "    32 / off      -0.71  -19.68*",
            "",
            " (32/off*100)-100",
            "",
        ]
        .join("\n");
        assert_eq!(table(&t), expected);
    }
}
