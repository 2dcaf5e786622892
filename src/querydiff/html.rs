//! `--export-html`: the querydiff section (servers, counts, a bar chart of
//! execution times, the matched records with their differing counters and
//! plans, the different results and errors) as one self-contained page in
//! the lab report's style. Every text from a query or a server is escaped.

use super::filter::Filter;
use super::record::{ratio, Record, Saved, Summary};
use super::results::Agreement;
use super::text::{detail_rows, one_line, ratio_text};
use crate::render::svg::{self, escape};
use std::fmt::Write;

/// Bars in the chart at most (the table lists every matched record).
const CHART_RECORDS: usize = 60;

/// The querydiff section: an `<h2>` and what follows it.
pub fn section(saved: &Saved, filter: Option<&Filter>, sum: &Summary) -> String {
    let mut h = String::new();
    servers_and_counts(&mut h, saved, filter, sum);
    let matched: Vec<&Record> = saved.records.iter().filter(|r| r.matched).collect();
    time_chart(&mut h, saved, &matched);
    if !matched.is_empty() {
        records_table(&mut h, saved, &matched);
        for r in &matched {
            record_details(&mut h, saved, r);
        }
    }
    differences_and_errors(&mut h, saved);
    h
}

/// The heading, the two servers, how the queries ran and the counts.
fn servers_and_counts(h: &mut String, saved: &Saved, filter: Option<&Filter>, sum: &Summary) {
    let [s1, s2] = &saved.run.servers;
    let _ = writeln!(h, "<h2 id=\"querydiff\">Query comparison: {} vs {}</h2>", escape(&s1.label), escape(&s2.label));
    h.push_str("<table><tr><th class=\"l\">server</th><th class=\"l\">DSN</th><th class=\"l\">driver</th><th class=\"l\">version</th><th class=\"l\">init</th></tr>\n");
    for s in [s1, s2] {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"wrap\">{}</td></tr>",
            escape(&s.label),
            escape(&s.dsn),
            escape(&s.driver),
            escape(&s.version),
            escape(&s.init.join("; "))
        );
    }
    h.push_str("</table>\n");
    let _ = writeln!(
        h,
        "<p class=\"context\">Queries: {} · {} cold, {} warm executions per query and server{} · started {} · times: median per temperature, statement sent to last row received{}</p>",
        escape(&saved.run.queries),
        saved.run.cold,
        saved.run.warm,
        saved.run.cold_command.as_ref().map(|c| format!(" (before each cold one: <code>{}</code>)", escape(c))).unwrap_or_default(),
        escape(&saved.run.started),
        filter.map(|f| format!(" · filter: <code>{}</code>", escape(f.source()))).unwrap_or_default()
    );
    let _ = writeln!(
        h,
        "<p>Incoming {} · skipped (not read-only) {} · executed {} · errors {} · different results <b>{}</b> · other order {} · reported {} of {} records</p>",
        sum.incoming, sum.skipped, sum.executed, sum.errors, sum.diverging, sum.other_order, sum.reported, sum.records
    );
    if sum.diverging > 0 {
        h.push_str("<div class=\"warn\">Some queries returned different rows on the two servers: see <a href=\"#qd-differ\">Different results</a>.</div>\n");
    }
}

/// A bar chart of both servers' times for the first [`CHART_RECORDS`]
/// matched records that ran on both; nothing when there are none.
fn time_chart(h: &mut String, saved: &Saved, matched: &[&Record]) {
    let [s1, s2] = &saved.run.servers;
    let charted: Vec<&&Record> = matched.iter().filter(|r| !r.failed()).take(CHART_RECORDS).collect();
    if !charted.is_empty() {
        let groups = charted
            .iter()
            .map(|r| svg::BarGroup {
                category: format!("{} {}", r.name, &r.temperature.as_str()[..1]),
                bars: (0..2)
                    .map(|k| {
                        let s = r.sides[k].seconds()?;
                        Some(svg::Bar {
                            value: s,
                            err: None,
                            censored: None,
                            tooltip: format!(
                                "{} ({}) on {}: {s:.6} s",
                                r.name,
                                r.temperature.as_str(),
                                saved.run.servers[k].label
                            ),
                        })
                    })
                    .collect(),
            })
            .collect();
        let more =
            if matched.len() > charted.len() { format!(" (first {} records)", charted.len()) } else { String::new() };
        h.push_str("<div class=\"charts\">");
        h.push_str(&svg::bar_chart(&svg::BarChart {
            title: format!("Execution time per query (c: cold, w: warm){more}"),
            y_label: "s".into(),
            series: vec![(s1.label.clone(), 0), (s2.label.clone(), 1)],
            groups,
            value_labels: false,
            width: 1100,
            height: 360,
        }));
        h.push_str("</div>\n");
    }
}

/// One row per matched record: both times, their ratio, rows, and whether
/// results and plans agree.
fn records_table(h: &mut String, saved: &Saved, matched: &[&Record]) {
    let [s1, s2] = &saved.run.servers;
    let _ = writeln!(
        h,
        "<table><tr><th class=\"l\">query</th><th class=\"l\">temp</th><th>{} s</th><th>{} s</th><th>ratio</th><th>rows</th><th class=\"l\">result</th><th class=\"l\">plan</th></tr>",
        escape(&s1.label),
        escape(&s2.label)
    );
    for r in matched {
        let t = |k: usize| {
            if r.sides[k].error.is_some() {
                "error".to_string()
            } else {
                r.sides[k].seconds().map_or("-".into(), |s| format!("{s:.6}"))
            }
        };
        let rows = |k: usize| r.sides[k].rows.map_or("-".into(), |x| x.to_string());
        let (a, b) = (r.sides[0].seconds(), r.sides[1].seconds());
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            escape(&r.name),
            r.temperature.as_str(),
            t(0),
            t(1),
            ratio_text(a.zip(b).and_then(|(a, b)| ratio(a, b))),
            if r.sides[0].rows == r.sides[1].rows { rows(0) } else { format!("{}/{}", rows(0), rows(1)) },
            r.result.as_str(),
            r.plans.map_or("-", |p| p.as_str())
        );
    }
    h.push_str("</table>\n");
}

/// A matched record unfolded: its query, what ran around it, its counters
/// side by side and both plans.
fn record_details(h: &mut String, saved: &Saved, r: &Record) {
    let [s1, s2] = &saved.run.servers;
    let _ = writeln!(
        h,
        "<details><summary>{} ({}): {}</summary>",
        escape(&r.name),
        r.temperature.as_str(),
        escape(&one_line(&r.query, 120))
    );
    let _ = writeln!(h, "<pre>{}</pre>", escape(&r.query));
    if !r.setup.is_empty() || !r.teardown.is_empty() {
        let _ = writeln!(
            h,
            "<p>Run around each execution, untimed:</p><pre>{}</pre>",
            escape(
                &r.setup.iter().chain(&["…".to_string()]).chain(&r.teardown).cloned().collect::<Vec<_>>().join(";\n")
            )
        );
    }
    let _ = writeln!(
        h,
        "<table><tr><th class=\"l\"></th><th>{}</th><th>{}</th><th>delta</th><th>ratio</th></tr>",
        escape(&s1.label),
        escape(&s2.label)
    );
    for row in detail_rows(r) {
        let _ = writeln!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&row[0]),
            escape(&row[1]),
            escape(&row[2]),
            escape(&row[3]),
            escape(&row[4])
        );
    }
    h.push_str("</table>\n");
    for k in 0..2 {
        if let Some(p) = &r.sides[k].plan {
            let _ = writeln!(h, "<p>Plan on {}:</p><pre>{}</pre>", escape(&saved.run.servers[k].label), escape(p));
        }
    }
    h.push_str("</details>\n");
}

/// The records whose results differ, then every error by server.
fn differences_and_errors(h: &mut String, saved: &Saved) {
    let differ: Vec<&Record> = saved.records.iter().filter(|r| r.result == Agreement::Differs).collect();
    if !differ.is_empty() {
        h.push_str("<h3 id=\"qd-differ\">Different results</h3>\n<ul>\n");
        for r in differ {
            let _ = writeln!(
                h,
                "<li>{} ({}): {}</li>",
                escape(&r.name),
                r.temperature.as_str(),
                escape(r.result_detail.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</ul>\n");
    }
    let failed: Vec<&Record> = saved.records.iter().filter(|r| r.failed()).collect();
    if !failed.is_empty() {
        h.push_str("<h3>Errors</h3>\n<ul>\n");
        for r in failed {
            for k in 0..2 {
                if let Some(e) = &r.sides[k].error {
                    let _ = writeln!(
                        h,
                        "<li>{} ({}) on {}: {}</li>",
                        escape(&r.name),
                        r.temperature.as_str(),
                        escape(&saved.run.servers[k].label),
                        escape(e)
                    );
                }
            }
        }
        h.push_str("</ul>\n");
    }
}

/// A whole page holding [`section`].
pub fn page(saved: &Saved, filter: Option<&Filter>, sum: &Summary) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>dbbench querydiff: {} vs {}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>dbbench querydiff</h1>\n{}\n</body>\n</html>\n",
        escape(&saved.run.servers[0].label),
        escape(&saved.run.servers[1].label),
        crate::render::style::STYLE,
        section(saved, filter, sum)
    )
}
