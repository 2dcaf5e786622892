//! SVG charts for the HTML report: line charts (categorical or linear x axis,
//! with error bars, min-max bands and shaded x ranges) and grouped bar charts.
//!
//! Each function returns one standalone `<svg>` element to inline in the report
//! page. The markup uses no scripts, no external resources and no `id`s, so any
//! number of charts can share a page, and the same input always gives the same
//! bytes. Hover tooltips are native SVG `<title>` children. To let the page's
//! script show and hide a series, each series is drawn inside
//! `<g class="series" data-series="N">` and its legend entry is
//! `<g class="series legend" data-series="N" style="cursor:pointer">`.
//!
//! NaN, infinities and magnitudes above 1e100 are skipped, never drawn.

use std::fmt::{self, Write};

/// Writes `format!` output into a `String` (which cannot fail).
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

/// Okabe–Ito colours (distinguishable with common colour-vision deficiencies).
/// Series pick one by index, cycled, so a configuration keeps its colour in
/// every chart. Yellow comes last because it is hard to see on white.
pub const PALETTE: &[&str] = &["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"];

/// The x axis of a [`LineChart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum XAxis {
    /// Evenly spaced labelled categories (such as thread counts); a point's `x` is the category index.
    Categories(Vec<String>),
    /// A numeric linear axis (such as seconds); a point's `x` is the value.
    #[default]
    Linear,
}

/// A vertical error bar around a point.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorBar {
    /// Both ends known.
    Range {
        /// Lower end, in y units.
        lo: f64,
        /// Upper end, in y units.
        hi: f64,
    },
    /// An interval with at least one unbounded end, e.g. a ratio's CI when the
    /// baseline's CI includes 0. The open side is drawn to the plot edge with
    /// an arrow, and the tooltip says so.
    Unbounded {
        /// Lower end, `None` if unbounded.
        lo: Option<f64>,
        /// Upper end, `None` if unbounded.
        hi: Option<f64>,
    },
}

/// One data point of a [`Series`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Point {
    /// Category index for [`XAxis::Categories`], value for [`XAxis::Linear`].
    pub x: f64,
    /// Value; NaN or infinite values are skipped (and break the line).
    pub y: f64,
    /// Error bar, if any (e.g. the 95% confidence interval of the mean).
    pub err: Option<ErrorBar>,
    /// Hover text; empty means "series @ x: y".
    pub tooltip: String,
}

/// One line of a [`LineChart`]. Points are joined in the given order; a
/// skipped (non-finite) point breaks the line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Index into [`PALETTE`], cycled.
    pub colour: usize,
    /// Dashed line and hollow markers, to tell e.g. p99 from p95 in the same colour.
    pub dashed: bool,
    /// The points, joined in this order.
    pub points: Vec<Point>,
    /// `(x, lo, hi)` outline of a light filled area (e.g. min-max over
    /// repeats), sorted by x; may be empty.
    pub band: Vec<(f64, f64, f64)>,
}

/// A grey x range (such as warmup) with a label at its top. Infinite ends
/// extend to the plot edge.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shade {
    /// Start, in x axis units (category index for categories).
    pub from: f64,
    /// End, in x axis units.
    pub to: f64,
    /// Text at the top of the range, e.g. "warmup".
    pub label: String,
}

/// A line chart; see [`line_chart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    /// Heading, also the accessible `<title>`.
    pub title: String,
    /// X axis caption; empty leaves it out.
    pub x_label: String,
    /// Y axis caption, e.g. "transactions/s" or "difference (%)"; empty leaves it out.
    pub y_label: String,
    /// A line under the legend saying what the error bars show; empty leaves it out.
    pub note: String,
    /// Categories or a linear axis.
    pub x: XAxis,
    /// The lines, drawn in this order (later on top).
    pub series: Vec<Series>,
    /// Grey x ranges drawn behind the data.
    pub shades: Vec<Shade>,
    /// Draw a horizontal line at y = 0 (the y range then includes 0).
    pub zero_line: bool,
    /// Start the y axis at 0 (or end it there, for negative data).
    pub y_from_zero: bool,
    /// The lowest value the y axis may show (a relative change cannot go below
    /// -100 %): the axis starts there at the latest.
    pub y_floor: Option<f64>,
    /// Size in px; 0 means 800 × 400.
    pub width: u32,
    /// See `width`.
    pub height: u32,
}

/// One bar of a [`BarGroup`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bar {
    /// Bar height, from 0; NaN or infinite bars are skipped.
    pub value: f64,
    /// Error bar `(lo, hi)`, e.g. min and max over repeats.
    pub err: Option<(f64, f64)>,
    /// Set when the value is only a bound (a timed-out query): the bar is
    /// hatched and labelled with this text, e.g. ">7200".
    pub censored: Option<String>,
    /// Hover text; empty means "series – category: value".
    pub tooltip: String,
}

/// One category of a [`BarChart`] (e.g. a query).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarGroup {
    /// Label under the group.
    pub category: String,
    /// One per series, in [`BarChart::series`] order; `None` leaves a gap.
    pub bars: Vec<Option<Bar>>,
}

/// A grouped bar chart; see [`bar_chart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    /// Heading, also the accessible `<title>`.
    pub title: String,
    /// Y axis caption; empty leaves it out.
    pub y_label: String,
    /// `(name, colour)` per series; colour indexes [`PALETTE`].
    pub series: Vec<(String, usize)>,
    /// The categories, left to right.
    pub groups: Vec<BarGroup>,
    /// Write each bar's value above it (where bars are wide enough).
    pub value_labels: bool,
    /// Size in px; 0 means 800 × 400.
    pub width: u32,
    /// See `width`.
    pub height: u32,
}

/// Escapes `s` for XML text and attribute values, and drops characters XML
/// 1.0 forbids or that do not belong in labels (control characters other
/// than tab and newline).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(ch),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Draws a line chart: one line per series with markers, error bars, bands,
/// shaded x ranges and a clickable legend. Charts without any drawable point
/// say "no data".
pub fn line_chart(c: &LineChart) -> String {
    let (w, h) = dims(c.width, c.height);
    let mut out = open(w, h, &c.title);
    let cats: Option<&[String]> = match &c.x {
        XAxis::Categories(v) => Some(v),
        XAxis::Linear => None,
    };
    let drawable = LineDrawable { cats };
    let Some((xs, ys)) = line_extent(c, drawable) else { return no_data(out, w, h) };
    let (ids, keys) = legend_keys(&c.series);
    let mut top = legend(&mut out, &keys, w, 46.0) + 6.0;
    if !c.note.is_empty() {
        put!(
            out,
            r##"<text x="{}" y="{}" text-anchor="middle" font-size="11px" fill="#555">{}</text>"##,
            P(w / 2.0),
            P(top + 4.0),
            escape(&clip(&c.note, (w / 6.0) as usize))
        );
        top += 14.0;
    }
    let mut yt = y_ticks(ys, c.y_from_zero || c.zero_line, tick_target(h - top - 60.0));
    if let Some(floor) = c.y_floor.filter(|f| ok(*f) && yt[0] < *f && *f < yt[yt.len() - 1]) {
        yt.retain(|t| *t > floor);
        yt.insert(0, floor);
    }
    let yl = tick_labels(&yt);
    let (x0, x1) = (left_margin(&yl, &c.y_label), w - 20.0);
    let cat = cats.map(|v| cat_layout(v, x1 - x0));
    let bottom = 28.0 + cat.as_ref().map_or(0.0, |l| l.extra) + if c.x_label.is_empty() { 0.0 } else { 16.0 };
    let (y0, y1) = (top, (h - bottom).max(top + 40.0));
    let ysc = Scale::new(yt[0], yt[yt.len() - 1], y1, y0);
    let (xd0, xd1) = match cats {
        Some(v) => (-0.5, v.len() as f64 - 0.5),
        None if xs.hi > xs.lo => (xs.lo, xs.hi),
        None => (xs.lo - (xs.lo.abs() * 0.05).max(1.0), xs.hi + (xs.hi.abs() * 0.05).max(1.0)),
    };
    let xsc = Scale::new(xd0, xd1, x0, x1);

    draw_shades(&mut out, &c.shades, &xsc, (xd0, xd1), (y0, y1));
    y_axis(&mut out, &yt, &yl, &ysc, x0, x1, &c.y_label);
    if c.zero_line {
        put!(out, r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#555"/>"##, P(x0), P(x1), y = P(ysc.at(0.0)));
    }
    match (cats, &cat) {
        (Some(v), Some(l)) => cat_labels(&mut out, v, l, |i| xsc.at(i as f64), y1),
        _ => linear_x_ticks(&mut out, &xsc, (xd0, xd1), x1 - x0, y1),
    }
    axes(&mut out, x0, x1, y0, y1);
    if !c.x_label.is_empty() {
        put!(
            out,
            r##"<text x="{}" y="{}" text-anchor="middle" fill="#333">{}</text>"##,
            P((x0 + x1) / 2.0),
            P(h - 8.0),
            escape(&c.x_label)
        );
    }

    // In category mode, series with error bars are nudged sideways a little so bars at the same category stay apart.
    let n = c.series.len();
    let has_err = c.series.iter().any(|s| s.points.iter().any(|p| p.err.is_some()));
    let nudge = cats.filter(|_| has_err).map_or(0.0, |v| ((x1 - x0) / v.len() as f64 * 0.4 / n as f64).min(4.0));
    let plot = LinePlot { xsc, ysc, y_ends: (yt[0], yt[yt.len() - 1]), y0, y1 };
    for (i, s) in c.series.iter().enumerate() {
        let dx = (i as f64 - (n as f64 - 1.0) / 2.0) * nudge;
        line_series(&mut out, s, ids[i], dx, drawable, &plot);
    }
    close(out)
}

/// Which of a line chart's values can be drawn: finite ones, and on a
/// category axis only those inside its categories.
#[derive(Clone, Copy)]
struct LineDrawable<'a> {
    cats: Option<&'a [String]>,
}

impl LineDrawable<'_> {
    fn x(&self, x: f64) -> bool {
        ok(x) && self.cats.is_none_or(|v| x > -0.5 && x < v.len() as f64 - 0.5)
    }
    fn point(&self, p: &Point) -> bool {
        self.x(p.x) && ok(p.y)
    }
    fn band(&self, b: &(f64, f64, f64)) -> bool {
        self.x(b.0) && ok(b.1) && ok(b.2)
    }
}

/// Where a line chart's series are drawn: the scales, the y axis' ends (its
/// first and last tick) and the plot's top and bottom in pixels.
struct LinePlot {
    xsc: Scale,
    ysc: Scale,
    y_ends: (f64, f64),
    y0: f64,
    y1: f64,
}

/// The x and y ranges a line chart shows, or `None` when it has no drawable
/// point or band.
fn line_extent(c: &LineChart, drawable: LineDrawable) -> Option<(Span, Span)> {
    // The y range is the data's (points and bands); error bars widen it by at
    // most ERR_REACH of the data's span on each side, so a wide interval of a
    // noisy cell does not squash the data into a line. An end beyond the
    // range is drawn to the plot edge with an arrow.
    const ERR_REACH: f64 = 0.5;
    let (mut xs, mut ys) = (Span::new(), Span::new());
    for s in &c.series {
        for p in s.points.iter().filter(|p| drawable.point(p)) {
            xs.add(p.x);
            ys.add(p.y);
        }
        for b in s.band.iter().filter(|b| drawable.band(b)) {
            xs.add(b.0);
            ys.add(b.1);
            ys.add(b.2);
        }
    }
    if ys.empty() {
        return None;
    }
    if c.y_from_zero || c.zero_line {
        ys.add(0.0);
    }
    let reach = (ys.hi - ys.lo).max(ys.hi.abs().max(ys.lo.abs()) * 0.1) * ERR_REACH;
    let (near_lo, near_hi) = (ys.lo - reach, ys.hi + reach);
    for p in c.series.iter().flat_map(|s| &s.points).filter(|p| drawable.point(p)) {
        if let Some((lo, hi)) = p.err.as_ref().and_then(err_ends) {
            lo.into_iter().chain(hi).filter(|v| *v >= near_lo && *v <= near_hi).for_each(|v| ys.add(v));
        }
    }
    if drawable.cats.is_none() {
        c.shades.iter().for_each(|s| [s.from, s.to].into_iter().for_each(|v| xs.add(v)));
    }
    Some((xs, ys))
}

/// The legend's entries, and per series the `data-series` index it toggles:
/// series repeating an earlier (name, colour, dashed) share its entry.
fn legend_keys(series: &[Series]) -> (Vec<usize>, Vec<Key<'_>>) {
    let mut ids: Vec<usize> = Vec::new();
    let mut keys = Vec::new();
    for (i, s) in series.iter().enumerate() {
        match series[..i].iter().position(|t| t.name == s.name && t.colour == s.colour && t.dashed == s.dashed) {
            Some(j) => ids.push(ids[j]),
            None => {
                ids.push(i);
                keys.push(Key { series: i, name: &s.name, colour: s.colour, dashed: s.dashed, swatch: false });
            }
        }
    }
    (ids, keys)
}

/// The grey x ranges behind the data, each labelled at its top; ends beyond
/// the x axis `(xd0, xd1)` stop at the plot's edge.
fn draw_shades(out: &mut String, shades: &[Shade], xsc: &Scale, (xd0, xd1): (f64, f64), (y0, y1): (f64, f64)) {
    for s in shades.iter().filter(|s| !s.from.is_nan() && !s.to.is_nan()) {
        let (a, b) = (xsc.at(s.from.clamp(xd0, xd1)), xsc.at(s.to.clamp(xd0, xd1)));
        if b > a {
            put!(
                out,
                r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#ebebeb"/>"##,
                P(a),
                P(y0),
                P(b - a),
                P(y1 - y0)
            );
            put!(
                out,
                r##"<text x="{}" y="{}" font-size="11px" fill="#555">{}</text>"##,
                P(a + 4.0),
                P(y0 + 14.0),
                escape(&s.label)
            );
        }
    }
}

/// Ticks and labels of a linear x axis `(xd0, xd1)`, `plot_w` px wide, under
/// the plot's bottom `y1`.
fn linear_x_ticks(out: &mut String, xsc: &Scale, (xd0, xd1): (f64, f64), plot_w: f64, y1: f64) {
    let xt = nice_ticks(xd0, xd1, tick_target(plot_w) + 1);
    for (t, l) in xt.iter().zip(tick_labels(&xt)).filter(|(t, _)| **t >= xd0 - 1e-9 * (xd1 - xd0) && **t <= xd1) {
        let x = P(xsc.at(*t));
        put!(out, r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#999"/>"##, P(y1), P(y1 + 4.0));
        put!(out, r##"<text x="{x}" y="{}" text-anchor="middle" fill="#444">{l}</text>"##, P(y1 + 17.0));
    }
}

/// One series of a line chart as a toggleable group `data-series="{id}"`:
/// its band, its line, and a marker with a tooltip and error bar per point,
/// all shifted `dx` px sideways.
fn line_series(out: &mut String, s: &Series, id: usize, dx: f64, drawable: LineDrawable, plot: &LinePlot) {
    let LinePlot { xsc, ysc, y_ends: (dlo, dhi), y0, y1 } = plot;
    let (col, dash) = (colour(s.colour), if s.dashed { r#" stroke-dasharray="6 4""# } else { "" });
    let at = |x: f64, y: f64| format!("{} {}", P(xsc.at(x) + dx), P(ysc.at(y)));
    put!(out, r#"<g class="series" data-series="{}">"#, id);
    let band: Vec<_> = s.band.iter().filter(|b| drawable.band(b)).collect();
    if band.len() >= 2 {
        let upper: Vec<String> = band.iter().map(|b| at(b.0, b.2)).collect();
        let lower: Vec<String> = band.iter().rev().map(|b| at(b.0, b.1)).collect();
        put!(out, r#"<path d="M{}L{}Z" fill="{col}" fill-opacity="0.15"/>"#, upper.join("L"), lower.join("L"));
    }
    let mut d = String::new();
    let mut pen_down = false;
    for p in &s.points {
        if drawable.point(p) {
            put!(d, "{}{}", if pen_down { "L" } else { "M" }, at(p.x, p.y));
        }
        pen_down = drawable.point(p);
    }
    if d.contains('L') {
        put!(out, r#"<path d="{d}" fill="none" stroke="{col}" stroke-width="2" stroke-linejoin="round"{dash}/>"#);
    }
    // Markers on long series would hide the line, so those only get invisible hover targets.
    let visible = s.points.iter().filter(|p| drawable.point(p)).count() <= 60;
    for p in s.points.iter().filter(|p| drawable.point(p)) {
        let (x, y) = (xsc.at(p.x) + dx, ysc.at(p.y));
        let mut tip = if p.tooltip.is_empty() {
            let xl = drawable.cats.map_or_else(|| fmt_value(p.x), |v| v[p.x.round() as usize].clone());
            format!("{} @ {}: {}", s.name, xl, fmt_value(p.y))
        } else {
            p.tooltip.clone()
        };
        if let Some((lo, hi)) = p.err.as_ref().and_then(err_ends) {
            // Ends outside the axis run to the plot edge (an arrow, no cap).
            let (lo_in, hi_in) = (lo.filter(|v| v >= dlo), hi.filter(|v| v <= dhi));
            error_bar(out, x, lo_in.map(|v| ysc.at(v)), hi_in.map(|v| ysc.at(v)), *y0, *y1, 4.0, col);
            match (lo, hi) {
                (None, None) => tip.push_str("\n(CI unbounded)"),
                (None, _) => tip.push_str("\n(CI unbounded below)"),
                (_, None) => tip.push_str("\n(CI unbounded above)"),
                _ if lo_in.is_none() || hi_in.is_none() => tip.push_str("\n(the bar reaches beyond the chart)"),
                _ => {}
            }
        }
        let style = match (visible, s.dashed) {
            (false, _) => format!(r#"r="4" fill="{col}" fill-opacity="0""#),
            (true, false) => format!(r#"r="3.5" fill="{col}""#),
            (true, true) => format!(r##"r="3.5" fill="#fff" stroke="{col}" stroke-width="1.5""##),
        };
        put!(out, r#"<circle cx="{}" cy="{}" {style}><title>{}</title></circle>"#, P(x), P(y), escape(&tip));
    }
    out.push_str("</g>");
}

/// Draws a grouped bar chart: one group per category, one bar per series,
/// with optional error bars, value labels and hatched censored bars.
/// Charts without any drawable bar say "no data".
pub fn bar_chart(c: &BarChart) -> String {
    let (w, h) = dims(c.width, c.height);
    let mut out = open(w, h, &c.title);
    let ns = c.series.len();
    let bars = |g| drawable_bars(g, ns);
    let err = |b: &Bar| b.err.filter(|e| ok(e.0) && ok(e.1));
    // Value labels on bars thinner than a line of text would overlap their neighbours; censored labels always show.
    let label =
        |b: &Bar, bw: f64| b.censored.clone().or_else(|| (c.value_labels && bw >= 9.0).then(|| fmt_value(b.value)));
    let mut ys = Span::new();
    for (_, b) in c.groups.iter().flat_map(bars) {
        ys.add(b.value);
        err(b).into_iter().for_each(|e| [e.0, e.1].into_iter().for_each(|v| ys.add(v)));
    }
    if ys.empty() {
        return no_data(out, w, h);
    }
    ys.add(0.0);
    let keys: Vec<Key> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Key { series: i, name: &s.0, colour: s.1, dashed: false, swatch: true })
        .collect();
    let top = legend(&mut out, &keys, w, 46.0) + 6.0;
    let cats: Vec<String> = c.groups.iter().map(|g| g.category.clone()).collect();
    let target = tick_target(h - top - 60.0);
    let layout = |yt: &[f64]| {
        let yl = tick_labels(yt);
        let x0 = left_margin(&yl, &c.y_label);
        let cat = cat_layout(&cats, w - 20.0 - x0);
        (yl, x0, cat)
    };
    let bar_w = |x0: f64| (w - 20.0 - x0) / cats.len() as f64 * 0.8 / ns as f64;
    let rotated = |text: &str, bw: f64| text_w(text, 10.0) > bw + 2.0;
    let mut yt = y_ticks(ys, true, target);
    let (_, x0, cat) = layout(&yt);
    // Labels above (below, for negative values) bars need headroom: widen the range so the label fits in the plot.
    let plot_h = h - top - 28.0 - cat.extra;
    let mut padded = ys;
    for (_, b) in c.groups.iter().flat_map(bars) {
        if let Some(text) = label(b, bar_w(x0)) {
            let px = if rotated(&text, bar_w(x0)) { text_w(&text, 10.0) + 6.0 } else { 14.0 };
            let f = (px / plot_h.max(1.0)).min(0.6);
            let (lo, hi) = err(b).map_or((b.value, b.value), |e| (e.0.min(b.value), e.1.max(b.value)));
            padded.add(if b.value >= 0.0 { (hi - f * ys.lo) / (1.0 - f) } else { (lo - f * ys.hi) / (1.0 - f) });
        }
    }
    yt = y_ticks(padded, true, target);
    let (yl, x0, cat) = layout(&yt);
    let (x1, y0, y1) = (w - 20.0, top, (h - 28.0 - cat.extra).max(top + 40.0));
    let ysc = Scale::new(yt[0], yt[yt.len() - 1], y1, y0);
    let band = (x1 - x0) / cats.len() as f64;
    let bw = bar_w(x0);
    y_axis(&mut out, &yt, &yl, &ysc, x0, x1, &c.y_label);
    cat_labels(&mut out, &cats, &cat, |i| x0 + (i as f64 + 0.5) * band, y1);
    axes(&mut out, x0, x1, y0, y1);
    let base = ysc.at(0.0);
    if yt[0] < 0.0 {
        put!(out, r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#555"/>"##, P(x0), P(x1), y = P(base));
    }
    for (si, (name, colour_ix)) in c.series.iter().enumerate() {
        let col = colour(*colour_ix);
        put!(out, r#"<g class="series" data-series="{si}">"#);
        for (gi, g) in c.groups.iter().enumerate() {
            let Some((_, b)) = bars(g).find(|(i, _)| *i == si) else { continue };
            let x = x0 + gi as f64 * band + band * 0.1 + si as f64 * bw;
            let (yv, cx) = (ysc.at(b.value), x + bw / 2.0);
            let (ry, rh, rw) = (yv.min(base), (yv - base).abs(), (bw - if bw > 4.0 { 1.0 } else { 0.0 }).max(0.5));
            let tip = match (&b.censored, b.tooltip.is_empty()) {
                (_, false) => b.tooltip.clone(),
                (Some(cens), true) => format!("{name} – {}: {cens}", g.category),
                (None, true) => format!("{name} – {}: {}", g.category, fmt_value(b.value)),
            };
            let fill = if b.censored.is_some() {
                format!(r#"fill="{col}" fill-opacity="0.3" stroke="{col}""#)
            } else {
                format!(r#"fill="{col}""#)
            };
            put!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" {fill}><title>{}</title></rect>"#,
                P(x),
                P(ry),
                P(rw),
                P(rh),
                escape(&tip)
            );
            if b.censored.is_some() {
                hatch(&mut out, x, ry, rw, rh, col);
            }
            let (mut lo_px, mut hi_px) = (ry + rh, ry);
            if let Some((lo, hi)) = err(b) {
                error_bar(&mut out, cx, Some(ysc.at(lo)), Some(ysc.at(hi)), y0, y1, (bw * 0.25).min(4.0), "#222");
                (lo_px, hi_px) = (lo_px.max(ysc.at(lo)), hi_px.min(ysc.at(hi)));
            }
            if let Some(text) = label(b, bw) {
                let (neg, t) = (b.value < 0.0, escape(&text));
                let y = if neg { lo_px + 4.0 } else { hi_px - 4.0 };
                if rotated(&text, bw) {
                    let anchor = if neg { "end" } else { "start" };
                    put!(
                        out,
                        r##"<text transform="rotate(-90 {x} {y})" x="{x}" y="{y}" dy="0.35em" text-anchor="{anchor}" font-size="10px" fill="#333">{t}</text>"##,
                        x = P(cx),
                        y = P(y)
                    );
                } else {
                    let y = if neg { y + 9.0 } else { y };
                    put!(
                        out,
                        r##"<text x="{}" y="{}" text-anchor="middle" font-size="10px" fill="#333">{t}</text>"##,
                        P(cx),
                        P(y)
                    );
                }
            }
        }
        out.push_str("</g>");
    }
    close(out)
}

/// The bars of `g` that can be drawn, with their series index.
fn drawable_bars(g: &BarGroup, series: usize) -> impl Iterator<Item = (usize, &Bar)> {
    g.bars.iter().take(series).enumerate().filter_map(|(i, b)| Some((i, b.as_ref().filter(|b| ok(b.value))?)))
}

/// An SVG coordinate: one decimal, and never NaN or inf (those become 0).
struct P(f64);

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let v = if self.0.is_finite() { (self.0.clamp(-1e6, 1e6) * 10.0).round() / 10.0 } else { 0.0 };
        if v == v.trunc() {
            write!(f, "{}", v as i64)
        } else {
            write!(f, "{v:.1}")
        }
    }
}

/// Whether a value can be drawn.
fn ok(v: f64) -> bool {
    v.is_finite() && v.abs() <= 1e100
}

fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn dims(w: u32, h: u32) -> (f64, f64) {
    let d = |v: u32, default: f64, min: f64| if v == 0 { default } else { (v as f64).max(min) };
    (d(w, 800.0, 240.0), d(h, 400.0, 160.0))
}

/// Rough text width; generous so labels do not collide in wide fonts.
fn text_w(s: &str, font_px: f64) -> f64 {
    s.chars().count() as f64 * font_px * 0.6
}

/// Shortens long labels with an ellipsis.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).chain(['…']).collect()
    }
}

/// An error bar's drawable ends (`None` = open to the plot edge), or `None`
/// if a given end is not a number.
fn err_ends(e: &ErrorBar) -> Option<(Option<f64>, Option<f64>)> {
    match *e {
        ErrorBar::Range { lo, hi } => (ok(lo) && ok(hi)).then_some((Some(lo), Some(hi))),
        ErrorBar::Unbounded { lo, hi } => (lo.is_none_or(ok) && hi.is_none_or(ok)).then_some((lo, hi)),
    }
}

/// Range of the drawable values seen.
#[derive(Clone, Copy)]
struct Span {
    lo: f64,
    hi: f64,
}

impl Span {
    fn new() -> Span {
        Span { lo: f64::INFINITY, hi: f64::NEG_INFINITY }
    }
    fn add(&mut self, v: f64) {
        if ok(v) {
            (self.lo, self.hi) = (self.lo.min(v), self.hi.max(v));
        }
    }
    fn empty(&self) -> bool {
        self.lo > self.hi
    }
}

/// Linear map from data `d0..d1` to pixels `p0..p1`.
struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn new(d0: f64, d1: f64, p0: f64, p1: f64) -> Scale {
        Scale { d0, d1: if d1 > d0 { d1 } else { d0 + 1.0 }, p0, p1 }
    }
    fn at(&self, v: f64) -> f64 {
        self.p0 + (v - self.d0) / (self.d1 - self.d0) * (self.p1 - self.p0)
    }
}

/// How many y ticks fit in `px`.
fn tick_target(px: f64) -> usize {
    ((px / 50.0) as usize).clamp(3, 8)
}

/// Ticks at a 1-2-5 step covering `lo..hi` (the first tick ≤ lo, the last ≥ hi).
fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let hi = if hi > lo { hi } else { lo + lo.abs().max(1.0) * 0.1 };
    let raw = (hi - lo) / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let step = mag * [1.0, 2.0, 5.0, 10.0].into_iter().find(|s| norm <= s * (1.0 + 1e-9)).unwrap_or(10.0);
    let (k0, k1) = ((lo / step + 1e-9).floor() as i64, (hi / step - 1e-9).ceil() as i64);
    (k0..=k1.max(k0 + 1)).map(|k| k as f64 * step).collect()
}

/// Y ticks for values in `s`, with 5% headroom that does not cross zero.
fn y_ticks(mut s: Span, include_zero: bool, target: usize) -> Vec<f64> {
    if include_zero {
        s.add(0.0);
    }
    let pad = if s.hi > s.lo {
        (s.hi - s.lo) * 0.05
    } else if s.hi != 0.0 {
        s.hi.abs() * 0.1
    } else {
        1.0
    };
    let lo = if s.lo >= 0.0 { (s.lo - pad).max(0.0) } else { s.lo - pad };
    let hi = if s.hi <= 0.0 { (s.hi + pad).min(0.0) } else { s.hi + pad };
    nice_ticks(lo, if hi > lo { hi } else { lo + pad }, target)
}

/// Divisor and suffix for compact numbers of magnitude `a` (12k, 1.5M); "k"
/// only from 10000 up, since 1000-9999 read fine in full.
fn magnitude(a: f64) -> (f64, &'static str) {
    [(1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")].into_iter().find(|m| a >= m.0).map_or((1.0, ""), |m| (m.1, m.2))
}

/// Labels for evenly spaced ticks: same unit and decimals for all, as many
/// decimals as the step needs.
fn tick_labels(ticks: &[f64]) -> Vec<String> {
    let step = if ticks.len() > 1 { ticks[1] - ticks[0] } else { 1.0 };
    let (div, suffix) = magnitude(ticks.iter().fold(0.0, |m: f64, t| m.max(t.abs())));
    let s = step / div;
    let decimals = if s >= 1.0 { 0 } else { ((-s.log10() - 1e-9).ceil() as usize).min(9) };
    ticks
        .iter()
        .map(|&t| if t.abs() < step * 1e-6 { "0".to_string() } else { format!("{:.*}{suffix}", decimals, t / div) })
        .collect()
}

/// A single value with three significant digits, compact (7200, 12.3k, 0.0123).
fn fmt_value(v: f64) -> String {
    let (div, suffix) = magnitude(v.abs());
    let x = v / div;
    let a = x.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        ((2.0 - a.log10().floor()) as usize).min(9)
    };
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    format!("{s}{suffix}")
}

fn open(w: f64, h: f64, title: &str) -> String {
    let mut out = String::new();
    let (w, h, t) = (P(w), P(h), escape(title));
    put!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" font-family="sans-serif" font-size="12px">"#
    );
    put!(out, r##"<title>{t}</title><rect width="{w}" height="{h}" fill="#fff"/>"##);
    put!(
        out,
        r##"<text x="{}" y="22" text-anchor="middle" font-size="15px" font-weight="bold" fill="#222">{t}</text>"##,
        P(w.0 / 2.0)
    );
    out
}

fn close(mut out: String) -> String {
    out.push_str("</svg>");
    out
}

fn no_data(mut out: String, w: f64, h: f64) -> String {
    put!(
        out,
        r##"<text x="{}" y="{}" text-anchor="middle" font-size="14px" fill="#888">no data</text>"##,
        P(w / 2.0),
        P(h / 2.0)
    );
    close(out)
}

/// A legend entry; `series` is the `data-series` index it toggles.
struct Key<'a> {
    series: usize,
    name: &'a str,
    colour: usize,
    dashed: bool,
    swatch: bool,
}

/// Draws the legend in centred rows from `y` down; returns the y below it.
fn legend(out: &mut String, keys: &[Key], w: f64, y: f64) -> f64 {
    let names: Vec<String> = keys.iter().map(|k| clip(k.name, 40)).collect();
    let widths: Vec<f64> = names.iter().map(|n| 28.0 + text_w(n, 12.0) + 16.0).collect();
    let mut rows: Vec<(usize, usize, f64)> = Vec::new();
    for (i, kw) in widths.iter().enumerate() {
        match rows.last_mut() {
            Some(r) if r.2 + kw <= w - 20.0 => (r.1, r.2) = (i + 1, r.2 + kw),
            _ => rows.push((i, i + 1, *kw)),
        }
    }
    for (r, &(from, to, row_w)) in rows.iter().enumerate() {
        let ry = y + r as f64 * 18.0;
        let mut x = ((w - row_w + 16.0) / 2.0).max(4.0);
        for i in from..to {
            let (k, col) = (&keys[i], colour(keys[i].colour));
            put!(out, r#"<g class="series legend" data-series="{}" style="cursor:pointer">"#, k.series);
            put!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="16" fill="{col}" fill-opacity="0"/>"#,
                P(x),
                P(ry - 8.0),
                P(widths[i] - 12.0)
            );
            if k.swatch {
                put!(out, r#"<rect x="{}" y="{}" width="14" height="12" fill="{col}"/>"#, P(x + 4.0), P(ry - 6.0));
            } else {
                let dash = if k.dashed { r#" stroke-dasharray="6 4""# } else { "" };
                let fill = if k.dashed {
                    format!(r##"fill="#fff" stroke="{col}" stroke-width="1.5""##)
                } else {
                    format!(r#"fill="{col}""#)
                };
                put!(
                    out,
                    r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{col}" stroke-width="2"{dash}/>"#,
                    P(x),
                    P(x + 22.0),
                    y = P(ry)
                );
                put!(out, r#"<circle cx="{}" cy="{}" r="3.5" {fill}/>"#, P(x + 11.0), P(ry));
            }
            put!(
                out,
                r##"<text x="{}" y="{}" fill="#222">{}</text></g>"##,
                P(x + 28.0),
                P(ry + 4.0),
                escape(&names[i])
            );
            x += widths[i];
        }
    }
    y + rows.len() as f64 * 18.0
}

/// Left margin: room for the rotated y label and the widest tick label.
fn left_margin(tick_labels: &[String], y_label: &str) -> f64 {
    let widest = tick_labels.iter().map(|l| text_w(l, 12.0)).fold(0.0, f64::max);
    (if y_label.is_empty() { 8.0 } else { 26.0 }) + widest + 10.0
}

/// Horizontal grid lines, tick labels and the rotated y label.
fn y_axis(out: &mut String, ticks: &[f64], labels: &[String], ys: &Scale, x0: f64, x1: f64, y_label: &str) {
    for (t, l) in ticks.iter().zip(labels) {
        let y = ys.at(*t);
        put!(out, r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#e3e3e3"/>"##, P(x0), P(x1), y = P(y));
        put!(out, r##"<text x="{}" y="{}" text-anchor="end" fill="#444">{l}</text>"##, P(x0 - 6.0), P(y + 4.0));
    }
    if !y_label.is_empty() {
        let m = P((ys.p0 + ys.p1) / 2.0);
        put!(
            out,
            r##"<text transform="rotate(-90 16 {m})" x="16" y="{m}" text-anchor="middle" fill="#333">{}</text>"##,
            escape(y_label)
        );
    }
}

fn axes(out: &mut String, x0: f64, x1: f64, y0: f64, y1: f64) {
    put!(out, r##"<path d="M{} {}V{}H{}" fill="none" stroke="#999"/>"##, P(x0), P(y0), P(y1), P(x1));
}

/// How category labels are placed: horizontal if they fit, else rotated, and
/// only every n-th one if even rotated labels would overlap.
struct CatLayout {
    rotate: bool,
    every: usize,
    /// Extra bottom margin for rotated labels.
    extra: f64,
}

fn cat_layout(labels: &[String], plot_w: f64) -> CatLayout {
    let band = plot_w / labels.len().max(1) as f64;
    let widest = labels.iter().map(|l| text_w(&clip(l, 24), 11.0)).fold(0.0, f64::max);
    if widest + 6.0 <= band {
        CatLayout { rotate: false, every: 1, extra: 0.0 }
    } else {
        CatLayout { rotate: true, every: (16.0 / band).ceil().max(1.0) as usize, extra: widest * 0.64 }
    }
}

fn cat_labels(out: &mut String, labels: &[String], l: &CatLayout, x_of: impl Fn(usize) -> f64, y: f64) {
    for (i, label) in labels.iter().enumerate().step_by(l.every) {
        let (x, t) = (P(x_of(i)), escape(&clip(label, 24)));
        put!(out, r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#999"/>"##, P(y), P(y + 4.0));
        if l.rotate {
            let y = P(y + 14.0);
            put!(
                out,
                r##"<text transform="rotate(-40 {x} {y})" x="{x}" y="{y}" text-anchor="end" font-size="11px" fill="#444">{t}</text>"##
            );
        } else {
            put!(
                out,
                r##"<text x="{x}" y="{}" text-anchor="middle" font-size="11px" fill="#444">{t}</text>"##,
                P(y + 17.0)
            );
        }
    }
}

/// Vertical error bar at `x` from pixel `lo` to `hi`; an open end (`None`)
/// runs to the plot edge (`top`/`bottom`) and ends in an arrow instead of a cap.
#[allow(clippy::too_many_arguments)]
fn error_bar(out: &mut String, x: f64, lo: Option<f64>, hi: Option<f64>, top: f64, bottom: f64, cap: f64, col: &str) {
    let (a, b) = (lo.unwrap_or(bottom), hi.unwrap_or(top));
    let mut d = format!("M{} {}V{}", P(x), P(a), P(b));
    for (end, edge, dir) in [(lo, bottom, -1.0), (hi, top, 1.0)] {
        match end {
            Some(y) => put!(d, "M{} {}H{}", P(x - cap), P(y), P(x + cap)),
            None => put!(
                d,
                "M{} {}L{} {}L{} {}",
                P(x - 4.0),
                P(edge + dir * 7.0),
                P(x),
                P(edge),
                P(x + 4.0),
                P(edge + dir * 7.0)
            ),
        }
    }
    put!(out, r#"<path d="{d}" fill="none" stroke="{col}" stroke-width="1.5"/>"#);
}

/// Diagonal hatching inside a rectangle (marks censored bars without needing a pattern id).
fn hatch(out: &mut String, x: f64, y: f64, w: f64, h: f64, col: &str) {
    let mut d = String::new();
    let mut s = 5.0;
    while s < w + h {
        let (t0, t1) = ((s - w).max(0.0), s.min(h));
        put!(d, "M{} {}L{} {}", P(x + s - t0), P(y + t0), P(x + s - t1), P(y + t1));
        s += 5.0;
    }
    if !d.is_empty() {
        put!(out, r#"<path d="{d}" stroke="{col}" stroke-width="1"/>"#);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minimal well-formedness check: one root, balanced tags, quoted unique
    /// attributes, only known entities, no stray `<` or control characters.
    fn check_xml(s: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let (mut i, mut roots) = (0, 0);
        while i < s.len() {
            if s[i..].starts_with('<') {
                let end = i + s[i..].find('>').expect("unterminated tag");
                let tag = &s[i + 1..end];
                if let Some(name) = tag.strip_prefix('/') {
                    assert_eq!(stack.pop(), Some(name), "mismatched close at {i}");
                } else {
                    let body = tag.strip_suffix('/').unwrap_or(tag);
                    let name = body.split_whitespace().next().expect("empty tag");
                    assert!(name.chars().all(|c| c.is_ascii_alphanumeric()), "bad tag name {name}");
                    check_attrs(&body[name.len()..]);
                    roots += stack.is_empty() as usize;
                    if !tag.ends_with('/') {
                        stack.push(name);
                    }
                }
                i = end + 1;
            } else {
                let end = s[i..].find('<').map_or(s.len(), |k| i + k);
                check_text(&s[i..end]);
                assert!(!stack.is_empty() || s[i..end].trim().is_empty(), "text outside root");
                i = end;
            }
        }
        assert!(stack.is_empty() && roots == 1, "unbalanced: {stack:?}, {roots} roots");
    }

    fn check_attrs(mut rest: &str) {
        let mut names = Vec::new();
        while !rest.trim().is_empty() {
            assert!(rest.starts_with(' '), "attributes must be space separated: {rest}");
            let eq = rest.find("=\"").expect("attribute without =\"");
            let name = rest[..eq].trim();
            assert!(
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':'),
                "bad attribute {name}"
            );
            assert!(!names.contains(&name), "duplicate attribute {name}");
            names.push(name);
            let value_end = eq + 2 + rest[eq + 2..].find('"').expect("unterminated attribute");
            check_text(&rest[eq + 2..value_end]);
            rest = &rest[value_end + 1..];
        }
    }

    fn check_text(t: &str) {
        assert!(!t.contains('<') && !t.contains('>'), "raw < or > in {t}");
        assert!(!t.chars().any(|c| c.is_control() && c != '\t' && c != '\n'), "control char in {t:?}");
        for (k, _) in t.match_indices('&') {
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| t[k..].starts_with(e)),
                "bad entity in {t}"
            );
        }
    }

    fn pt(x: f64, y: f64) -> Point {
        Point { x, y, ..Default::default() }
    }

    fn threads() -> XAxis {
        XAxis::Categories(["1", "4", "8", "16", "32", "64", "128"].iter().map(|s| s.to_string()).collect())
    }

    fn series(name: &str, colour: usize, ys: &[f64]) -> Series {
        let points = ys.iter().enumerate().map(|(i, &y)| pt(i as f64, y)).collect();
        Series { name: name.into(), colour, points, ..Default::default() }
    }

    /// Values of attribute `attr` on all `<tag` elements; with `tipped`, only those with a tooltip (data, not legend).
    fn attrs(svg: &str, tag: &str, attr: &str, tipped: bool) -> Vec<f64> {
        let (key, open) = (format!(" {attr}=\""), format!("<{tag}"));
        let elements =
            svg.split(&open).skip(1).filter(|e| !tipped || e[e.find('>').unwrap() + 1..].starts_with("<title>"));
        elements.map(|e| e[e.find(&key).unwrap() + key.len()..].split('"').next().unwrap().parse().unwrap()).collect()
    }

    #[test]
    fn ticks() {
        assert_eq!(nice_ticks(0.0, 97.0, 5), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_ticks(-3.2, 5.1, 5), vec![-4.0, -2.0, 0.0, 2.0, 4.0, 6.0]);
        assert_eq!(tick_labels(&nice_ticks(-3.2, 5.1, 5)), ["-4", "-2", "0", "2", "4", "6"]);
        assert_eq!(tick_labels(&[0.0, 20000.0, 40000.0]), ["0", "20k", "40k"]);
        assert_eq!(tick_labels(&[1e6, 1.5e6, 2e6]), ["1.0M", "1.5M", "2.0M"]);
        assert_eq!(tick_labels(&nice_ticks(0.0, 0.27, 5)), ["0", "0.1", "0.2", "0.3"]);
        assert_eq!(tick_labels(&[-10.0, -5.0, 0.0, 5.0]), ["-10", "-5", "0", "5"]);
        assert_eq!(
            [fmt_value(7200.0), fmt_value(12345.0), fmt_value(0.01234), fmt_value(-2.5), fmt_value(0.0)],
            ["7200", "12.3k", "0.0123", "-2.5", "0"]
        );
        // All-equal values and a single zero still give a proper range.
        let mut s = Span::new();
        s.add(5.0);
        let t = y_ticks(s, false, 5);
        assert!(t[0] < 5.0 && *t.last().unwrap() > 5.0 && t[0] >= 0.0);
        let mut z = Span::new();
        z.add(0.0);
        assert_eq!(y_ticks(z, true, 5)[0], 0.0);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(escape("a&b \"q\" 'x'"), "a&amp;b &quot;q&quot; &#39;x&#39;");
        assert_eq!(escape("a\u{0}b\u{1b}c\rd\te\nf\u{85}g\u{FFFF}"), "abcd\te\nfg");
        let evil = "<script>alert(1)</script>";
        let c = LineChart {
            title: evil.into(),
            x_label: "a&b \"q\"".into(),
            y_label: evil.into(),
            x: XAxis::Categories(vec![evil.into(), "a&b \"q\"".into()]),
            series: vec![Series {
                points: vec![Point { tooltip: evil.into(), ..pt(0.0, 1.0) }, pt(1.0, 2.0)],
                ..series(evil, 0, &[])
            }],
            shades: vec![Shade { from: -1.0, to: 0.0, label: evil.into() }],
            ..Default::default()
        };
        let b = BarChart {
            title: evil.into(),
            y_label: "'".into(),
            series: vec![(evil.into(), 1)],
            groups: vec![BarGroup {
                category: evil.into(),
                bars: vec![Some(Bar { value: 1.0, censored: Some(evil.into()), ..Default::default() })],
            }],
            ..Default::default()
        };
        for svg in [line_chart(&c), bar_chart(&b)] {
            check_xml(&svg);
            assert!(!svg.contains("<script") && svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        }
        assert!(line_chart(&c).contains("a&amp;b &quot;q&quot;"));
    }

    #[test]
    fn non_finite_values_are_skipped() {
        let mut s = series("s", 0, &[1.0, f64::NAN, 3.0, f64::INFINITY, 5.0, 6.0, 7.0]);
        s.points[0].err = Some(ErrorBar::Range { lo: f64::NAN, hi: 2.0 });
        s.points[2].err = Some(ErrorBar::Unbounded { lo: Some(f64::NEG_INFINITY), hi: None });
        s.points[4].x = f64::NAN;
        s.band = vec![(0.0, 0.5, 1.5), (f64::NAN, 1.0, 2.0), (2.0, f64::NAN, 4.0), (3.0, 2.0, 3.0)];
        let c = LineChart {
            x: threads(),
            series: vec![s.clone()],
            shades: vec![Shade { from: f64::NAN, to: 1.0, label: "x".into() }],
            ..Default::default()
        };
        let l = LineChart { x: XAxis::Linear, ..c.clone() };
        let b = BarChart {
            series: vec![("a".into(), 0)],
            groups: vec![BarGroup {
                category: "Q1".into(),
                bars: vec![Some(Bar { value: f64::NAN, err: Some((f64::NAN, 1.0)), ..Default::default() })],
            }],
            value_labels: true,
            ..Default::default()
        };
        let mut b2 = b.clone();
        b2.groups[0].bars.push(Some(Bar { value: 2.0, err: Some((f64::NAN, 1.0)), ..Default::default() }));
        b2.series.push(("b".into(), 1));
        for svg in [line_chart(&c), line_chart(&l), bar_chart(&b), bar_chart(&b2)] {
            check_xml(&svg);
            let lower = svg.to_lowercase();
            assert!(!lower.contains("nan") && !lower.contains("inf"), "{svg}");
        }
        assert_eq!(attrs(&line_chart(&c), "circle", "cx", true).len(), 4);
        assert!(bar_chart(&b).contains("no data"));
    }

    #[test]
    fn category_positions_are_even() {
        let c = LineChart {
            x: threads(),
            series: vec![series("s", 0, &[1.0, 5.0, 9.0, 12.0, 13.0, 13.5, 13.0])],
            ..Default::default()
        };
        let svg = line_chart(&c);
        check_xml(&svg);
        let xs = attrs(&svg, "circle", "cx", true);
        assert_eq!(xs.len(), 7);
        let gaps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| (g - gaps[0]).abs() <= 0.11 && *g > 50.0), "{gaps:?}");
        // Thread labels are all shown, horizontally.
        assert!(svg.contains(">1</text>") && svg.contains(">128</text>"));
        assert!(!svg.contains("rotate(-40"));
    }

    #[test]
    fn error_bars_and_legend() {
        let mut a = series("wal", 2, &[1.0, 2.0]);
        a.points[0].err = Some(ErrorBar::Range { lo: 0.5, hi: 1.5 });
        a.points[1].err = Some(ErrorBar::Unbounded { lo: Some(-1.0), hi: None });
        let b = Series { dashed: true, ..series("wal p99", 2, &[3.0, 4.0]) };
        let again = series("wal", 2, &[2.0, 2.5]);
        let c = LineChart { x: threads(), series: vec![a, b, again], zero_line: true, ..Default::default() };
        let svg = line_chart(&c);
        check_xml(&svg);
        assert!(svg.contains("(CI unbounded above)") && !svg.contains("unbounded below"));
        assert!(svg.contains("stroke-dasharray"));
        assert_eq!(svg.matches(r#"class="series legend""#).count(), 2);
        assert_eq!(svg.matches(r#"<g class="series" data-series="0">"#).count(), 2);
        assert!(svg.contains(r#"<g class="series legend" data-series="1" style="cursor:pointer">"#));
        // The y range includes the finite error bar end and zero.
        assert!(svg.contains(">-1<") || svg.contains(">-1.0<") || svg.contains(">-2<"));
        assert_eq!(svg, line_chart(&c), "output must be deterministic");
    }

    #[test]
    fn the_data_not_the_error_bars_sets_the_range() {
        // Two repeats: a t interval of ±100k around 100 tps would flatten the data into a line.
        let mut a = series("a", 0, &[100.0, 120.0]);
        a.points[0].err = Some(ErrorBar::Range { lo: -100_000.0, hi: 100_000.0 });
        a.points[1].err = Some(ErrorBar::Range { lo: 110.0, hi: 150.0 });
        let c = LineChart { x: threads(), series: vec![a], y_from_zero: true, ..Default::default() };
        let svg = line_chart(&c);
        check_xml(&svg);
        let ticks: Vec<f64> = svg
            .split(r##"text-anchor="end" fill="#444">"##)
            .skip(1)
            .map(|t| t[..t.find('<').unwrap()].parse().unwrap())
            .collect();
        assert_eq!(ticks.first(), Some(&0.0), "{ticks:?}");
        // A near error bar widens the range (150 is within half the data's span of it) ...
        assert!(*ticks.last().unwrap() >= 150.0 && *ticks.last().unwrap() <= 200.0, "{ticks:?}");
        // ... a far one runs to the edge with an arrow and says so.
        assert!(svg.contains("(the bar reaches beyond the chart)"));
        // A floor: no tick below it, however the ticks fall.
        let r = LineChart {
            series: vec![series("r", 0, &[-88.0, 213.0])],
            zero_line: true,
            y_floor: Some(-100.0),
            x: threads(),
            ..Default::default()
        };
        let svg = line_chart(&r);
        let first: f64 = svg
            .split(r##"text-anchor="end" fill="#444">"##)
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(first, -100.0);
    }

    #[test]
    fn shades_and_linear_axis() {
        let xs: Vec<f64> = (-3..=97).map(|i| i as f64 * 10.0).collect();
        let s = Series {
            name: "cfg".into(),
            points: xs.iter().map(|&x| pt(x, 1000.0 + x)).collect(),
            band: xs.iter().map(|&x| (x, 900.0 + x, 1100.0 + x)).collect(),
            ..Default::default()
        };
        let c = LineChart {
            x: XAxis::Linear,
            series: vec![s],
            shades: vec![Shade { from: f64::NEG_INFINITY, to: 0.0, label: "warmup".into() }],
            ..Default::default()
        };
        let svg = line_chart(&c);
        check_xml(&svg);
        assert!(svg.contains(">warmup</text>") && svg.contains(r##"fill="#ebebeb""##));
        assert!(svg.contains(r#"fill-opacity="0.15""#), "band drawn");
        assert!(svg.contains(r#"fill-opacity="0"><title>"#), "many points: invisible hover markers");
    }

    #[test]
    fn empty_charts() {
        let empty = [
            LineChart::default(),
            LineChart { x: threads(), series: vec![series("a", 0, &[])], ..Default::default() },
            LineChart { x: XAxis::Categories(vec![]), series: vec![series("a", 0, &[1.0])], ..Default::default() },
        ];
        for c in &empty {
            let svg = line_chart(c);
            check_xml(&svg);
            assert!(svg.contains(">no data<") && svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        }
        let one = line_chart(&LineChart { series: vec![series("a", 0, &[3.0])], ..Default::default() });
        check_xml(&one);
        assert!(!one.contains("no data") && one.contains("<circle"));
        check_xml(&bar_chart(&BarChart::default()));
    }

    #[test]
    fn bar_chart_censored() {
        let bar = |v: f64| Some(Bar { value: v, err: Some((v * 0.9, v * 1.1)), ..Default::default() });
        let c = BarChart {
            title: "TPC-H".into(),
            y_label: "seconds".into(),
            series: vec![("a".into(), 0), ("b".into(), 1)],
            groups: vec![
                BarGroup { category: "Q1".into(), bars: vec![bar(10.0), bar(12.0)] },
                BarGroup {
                    category: "Q2".into(),
                    bars: vec![Some(Bar { value: 7200.0, censored: Some(">7200".into()), ..Default::default() }), None],
                },
            ],
            value_labels: true,
            ..Default::default()
        };
        let svg = bar_chart(&c);
        check_xml(&svg);
        assert!(svg.contains(">&gt;7200</text>") && svg.contains("a – Q2: &gt;7200"));
        assert!(svg.contains(r#"fill-opacity="0.3""#), "censored bar is hatched");
        assert_eq!(svg.matches("<rect x=").count(), 3 + 4, "three bars, two legend swatches and hit areas");
        // Many queries in a narrow chart: category labels rotate and thin out, value labels go.
        let groups = (1..=22).map(|q| BarGroup { category: format!("Q{q}"), bars: vec![bar(q as f64); 3] }).collect();
        let narrow = bar_chart(&BarChart { groups, width: 400, ..c });
        check_xml(&narrow);
        assert!(
            narrow.contains("rotate(-40")
                && narrow.contains(">Q1<")
                && !narrow.contains(">Q2<")
                && !narrow.contains(r#"font-size="10px""#)
        );
    }
}
