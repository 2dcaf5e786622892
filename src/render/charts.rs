//! `dbbench report --export-charts=DIR`: every chart of the HTML page as a
//! standalone SVG file (the page's own `<svg>` elements, which carry their
//! styles as attributes) and a PNG rasterised from it by `resvg`, pure Rust.
//!
//! File names are `NN-title.svg`/`.png`: the chart's place on the page and
//! its title made file-safe, so the same report gives the same names. Text
//! in the PNGs needs a font: fontdb loads the system's fonts; without any,
//! the PNGs are drawn without text and `export` says so.

use std::path::Path;
use std::sync::Arc;

/// Every `<svg>…</svg>` element of a page, in order.
pub fn charts_of(page: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg ") {
        let Some(len) = rest[start..].find("</svg>") else { break };
        let end = start + len + "</svg>".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

/// A chart's title (its first `<title>`), unescaped enough for a file name.
fn title_of(svg: &str) -> String {
    let t = svg.find("<title>").map(|i| &svg[i + 7..]).and_then(|s| s.find("</title>").map(|j| &s[..j]));
    t.unwrap_or("chart").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"")
}

/// `title` as a file name part: lower-case ASCII letters and digits, other runs as one `-`, at most 80 bytes.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for ch in title.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            s.push(ch);
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    let mut s = s.trim_end_matches('-').to_string();
    if s.len() > 80 {
        s.truncate(80);
        s = s.trim_end_matches('-').to_string();
    }
    if s.is_empty() {
        "chart".into()
    } else {
        s
    }
}

/// The system's fonts, with a sans-serif family the charts' `font-family="sans-serif"` finds.
pub fn fonts() -> resvg::usvg::fontdb::Database {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    let families: Vec<String> =
        db.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect::<Vec<_>>();
    let preferred = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial", "Helvetica", "FreeSans"];
    if let Some(f) = preferred
        .iter()
        .find(|p| families.iter().any(|f| f == *p))
        .map(|s| s.to_string())
        .or_else(|| families.first().cloned())
    {
        db.set_sans_serif_family(f);
    }
    db
}

/// One SVG rasterised at its own size (its `width`/`height`), as PNG bytes.
pub fn png(svg: &str, fonts: &Arc<resvg::usvg::fontdb::Database>) -> Result<Vec<u8>, String> {
    let options = resvg::usvg::Options { fontdb: fonts.clone(), ..Default::default() };
    let tree = resvg::usvg::Tree::from_str(svg, &options).map_err(|e| format!("the chart is not valid SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("cannot draw a {}×{} chart", size.width(), size.height()))?;
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("cannot encode the PNG: {e}"))
}

/// Writes every chart of `page` into `dir` (created if missing, refused if a
/// symlink or writable by others) as SVG and PNG; returns the lines to print:
/// each file written, and a note when no font was found.
pub fn export(page: &str, dir: &Path) -> Result<Vec<String>, String> {
    crate::safe_fs::private_dir_all(dir, 0o755, "the charts' directory")?;
    let charts = charts_of(page);
    let fonts = Arc::new(fonts());
    let mut lines = Vec::new();
    if fonts.is_empty() {
        lines.push(
            "note: no system fonts found (install e.g. fonts-dejavu-core): the PNG charts have no text; the SVGs do"
                .to_string(),
        );
    }
    let digits = charts.len().max(1).to_string().len().max(2);
    for (i, svg) in charts.iter().enumerate() {
        let base = format!("{:0digits$}-{}", i + 1, slug(&title_of(svg)));
        let svg_path = dir.join(format!("{base}.svg"));
        let standalone = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{svg}\n");
        crate::render::write_file(&svg_path, standalone.as_bytes())?;
        lines.push(format!("wrote {}", svg_path.display()));
        let png_path = dir.join(format!("{base}.png"));
        let bytes = png(svg, &fonts).map_err(|e| format!("{}: {e}", svg_path.display()))?;
        crate::render::write_file(&png_path, &bytes)?;
        lines.push(format!("wrote {}", png_path.display()));
    }
    if charts.is_empty() {
        lines.push(format!("the report has no charts: nothing written to {}", dir.display()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_found_and_named_stably() {
        let page = "<p>x</p><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"20\"><title>oltp &amp; co, 4 threads: tps</title></svg><div><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"5\" height=\"5\"></svg></div>";
        let c = charts_of(page);
        assert_eq!(c.len(), 2);
        assert_eq!(slug(&title_of(c[0])), "oltp-co-4-threads-tps");
        assert_eq!(slug(&title_of(c[1])), "chart");
        assert_eq!(slug("Innodb_rows_read/s"), "innodb-rows-read-s");
    }

    #[test]
    fn a_chart_rasterises_at_its_size() {
        let chart = crate::render::svg::line_chart(&crate::render::svg::LineChart {
            title: "t".into(),
            series: vec![crate::render::svg::Series {
                name: "a".into(),
                points: (0..5)
                    .map(|i| crate::render::svg::Point { x: i as f64, y: (i * i) as f64, ..Default::default() })
                    .collect(),
                ..Default::default()
            }],
            width: 300,
            height: 200,
            ..Default::default()
        });
        let bytes = png(&chart, &Arc::new(fonts())).unwrap();
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(&bytes).unwrap();
        assert_eq!((pixmap.width(), pixmap.height()), (300, 200));
        // Not blank: the line and axes are darker than the white background.
        assert!(pixmap.pixels().iter().any(|p| p.red() < 128));
    }
}
