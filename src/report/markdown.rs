//! `--export-markdown`: the tables as GitHub-flavoured Markdown, ready for
//! an issue, a wiki page or a pull request.

use super::tables::Table;

/// Markdown cell text: pipes escaped, line breaks flattened, and the
/// characters Markdown would turn into emphasis or HTML escaped, so a
/// configuration named `*x*` or `<b>` prints as written.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' | '*' | '_' | '`' | '[' | ']' | '\\' | '~' => {
                o.push('\\');
                o.push(ch);
            }
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// One table: a heading line, the grid (group rows in bold, nested rows
/// indented with non-breaking spaces), the legend as a list.
pub fn table(t: &Table) -> String {
    let mut o = format!("**{}**\n\n", escape(&t.title));
    let head: Vec<String> = t.columns.iter().map(|c| escape(c)).collect();
    let corner = if t.column_caption.is_empty() {
        escape(&t.corner)
    } else {
        format!("{} \\\\ {}", escape(&t.corner), escape(&t.column_caption))
    };
    o.push_str(&format!("| {corner} | {} |\n", head.join(" | ")));
    o.push_str(&format!("|---|{}\n", "---:|".repeat(t.columns.len())));
    for r in &t.rows {
        if r.cells.is_empty() {
            o.push_str(&format!("| **{}** |{}\n", escape(&r.label), " |".repeat(t.columns.len())));
        } else {
            let indent = "&nbsp;&nbsp;".repeat(r.indent.saturating_sub(1));
            let cells: Vec<String> = r.cells.iter().map(|c| escape(&c.text)).collect();
            o.push_str(&format!("| {indent}{} | {} |\n", escape(&r.label), cells.join(" | ")));
        }
    }
    if !t.legend.is_empty() {
        o.push('\n');
        for l in &t.legend {
            o.push_str(&format!("- {}\n", escape(l)));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tables::{Cell, Row};

    #[test]
    fn markdown_table_escapes_what_markdown_would_interpret() {
        let t = Table {
            title: "a|b".into(),
            corner: "workload".into(),
            column_caption: "Number of threads".into(),
            columns: vec!["1".into()],
            rows: vec![
                Row { indent: 1, label: "<script>".into(), cells: vec![] },
                Row { indent: 2, label: "*x* / off".into(), cells: vec![Cell { text: "53%*".into(), note: None }] },
            ],
            legend: vec!["* high spread".into()],
        };
        let md = table(&t);
        assert_eq!(
            md,
            "**a\\|b**\n\n| workload \\\\ Number of threads | 1 |\n|---|---:|\n| **&lt;script&gt;** | |\n| &nbsp;&nbsp;\\*x\\* / off | 53%\\* |\n\n- \\* high spread\n"
        );
    }
}
