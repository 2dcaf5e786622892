//! The .xlsx workbook behind `dbbench report --export-xlsx`: a neutral model (sheets of text and numbers) that
//! `xlsx.rs` fills with the report's sheets, written by the `rust_xlsxwriter` crate.
//!
//! The crate writes the package (ZIP, XML parts, shared strings, styles, escaping, Excel's `_xHHHH_` convention).
//! What stays here is what it leaves to its caller, as rules that change the content rather than fail the export:
//! sheet names made legal and unique (the crate only validates them), cell text cleaned of characters XML cannot
//! carry and cut to Excel's length limit, and cells beyond Excel's grid named in the error. The creation date in
//! the document properties is fixed and the crate's ZIP entries carry a fixed timestamp, so the same sheets always
//! give the same bytes (stored reports diff cleanly and tests can compare bytes).

use rust_xlsxwriter::{DocProperties, ExcelDateTime, Format, Workbook, XlsxError};

/// One cell's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Nothing is written for this cell.
    Empty,
    /// Text in the default font; an empty string is an empty cell.
    Text(String),
    /// A number, written so it reads back exactly; NaN and ±inf become empty cells, as SpreadsheetML has no spelling
    /// for them.
    Number(f64),
    /// Header text in a bold font; an empty string is an empty cell.
    Bold(String),
}

/// One worksheet: a grid of cells starting at A1.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sheet {
    /// Tab name. Excel's rules are enforced by changing the name, not by failing: forbidden characters are replaced
    /// (`[` `]` become `(` `)`, `: * ? / \` become `_`), tabs and line breaks become spaces, other control characters
    /// are dropped, leading and trailing apostrophes removed, the name cut to 31 characters, an empty name becomes
    /// `SheetN` (N its position), and a name already used (case-insensitively) or the reserved `History` gets a
    /// ` (2)`, ` (3)` … suffix.
    pub name: String,
    /// Rows from the top, cells from the left.
    pub rows: Vec<Vec<Cell>>,
    /// Widths of the leftmost columns in characters (Excel's unit, the width of a "0"); missing, non-finite or
    /// non-positive entries keep the default width, and widths above Excel's maximum of 255 are capped.
    pub column_widths: Vec<f64>,
    /// Freeze the first row, so the header stays in view while scrolling.
    pub freeze_header: bool,
}

/// The workbook as bytes (a ZIP archive), sheets in the given order with the first one selected.
///
/// Errors: no sheets (a workbook needs one), a cell outside Excel's grid (1048576 rows × 16384 columns, XFD),
/// or an archive that would need ZIP64 (4 GiB or more).
pub fn workbook(sheets: &[Sheet]) -> Result<Vec<u8>, String> {
    if sheets.is_empty() {
        return Err("xlsx: a workbook needs at least one sheet".to_string());
    }
    let xlsx_error = |e: XlsxError| format!("xlsx: {e}");
    let mut book = Workbook::new();
    // A fixed date: the crate's default is the clock, which would make the output differ from run to run.
    let created = ExcelDateTime::from_ymd(2000, 1, 1).map_err(xlsx_error)?;
    book.set_properties(&DocProperties::new().set_author("dbbench").set_creation_datetime(&created));
    let bold = Format::new().set_bold();
    for (sheet, name) in sheets.iter().zip(sheet_names(sheets)) {
        let worksheet = book.add_worksheet();
        worksheet.set_name(&name).map_err(xlsx_error)?;
        if sheet.freeze_header {
            worksheet.set_freeze_panes(1, 0).map_err(xlsx_error)?;
        }
        for (column, width) in sheet.column_widths.iter().take(MAX_COLUMNS).enumerate() {
            if width.is_finite() && *width > 0.0 {
                worksheet.set_column_width(column as u16, width.min(MAX_COLUMN_WIDTH)).map_err(xlsx_error)?;
            }
        }
        for (r, row) in sheet.rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                let text = match cell {
                    Cell::Text(raw) | Cell::Bold(raw) => cell_text(raw),
                    Cell::Empty | Cell::Number(_) => String::new(),
                };
                let written = match cell {
                    Cell::Empty => false,
                    Cell::Number(x) => x.is_finite(),
                    Cell::Text(_) | Cell::Bold(_) => !text.is_empty(),
                };
                if !written {
                    continue;
                }
                let (row_number, column) = (r + 1, c + 1);
                if row_number > MAX_ROWS {
                    return Err(format!(
                        "xlsx: sheet {name:?}: row {row_number} is beyond Excel's last row, {MAX_ROWS}"
                    ));
                }
                if column > MAX_COLUMNS {
                    return Err(format!(
                        "xlsx: sheet {name:?}: column {column} is beyond Excel's last column, {MAX_COLUMNS} (XFD)"
                    ));
                }
                // Both fit: checked against Excel's grid just above.
                let (r, c) = (r as u32, c as u16);
                match cell {
                    Cell::Number(x) => worksheet.write_number(r, c, *x),
                    Cell::Bold(_) => worksheet.write_string_with_format(r, c, &text, &bold),
                    Cell::Text(_) | Cell::Empty => worksheet.write_string(r, c, &text),
                }
                .map_err(|e| format!("xlsx: sheet {name:?}: {e}"))?;
            }
        }
    }
    book.save_to_buffer().map_err(xlsx_error)
}

/// Excel's grid: rows 1..=1048576, columns A..=XFD.
const MAX_ROWS: usize = 1_048_576;
const MAX_COLUMNS: usize = 16_384;
/// Excel's limits count UTF-16 code units, so a character outside the BMP counts twice.
const MAX_CELL_TEXT: usize = 32_767;
const MAX_SHEET_NAME: usize = 31;
const MAX_COLUMN_WIDTH: f64 = 255.0;
/// Excel refuses this sheet name (it belongs to change tracking in shared workbooks).
const RESERVED_SHEET_NAME: &str = "history";

/// Cell text as it should read: characters XML 1.0 cannot carry removed (control characters other than tab, LF
/// and CR; U+FFFE and U+FFFF), then cut to Excel's 32767-unit limit, ending in "…" when cut so the loss shows.
fn cell_text(raw: &str) -> String {
    let clean: String = raw.chars().filter(|&c| is_xml_char(c)).collect();
    if utf16_len(&clean) <= MAX_CELL_TEXT {
        return clean;
    }
    let mut cut = truncate_utf16(&clean, MAX_CELL_TEXT - '…'.len_utf16()).to_string();
    cut.push('…');
    cut
}

/// XML 1.0's Char production; surrogates cannot occur in a Rust `char`.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `s` that is at most `max_units` UTF-16 code units, never splitting a character.
fn truncate_utf16(s: &str, max_units: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max_units {
            return &s[..i];
        }
    }
    s
}

/// Final tab names, in order; see `Sheet::name` for the rules.
fn sheet_names(sheets: &[Sheet]) -> Vec<String> {
    let mut taken = vec![RESERVED_SHEET_NAME.to_string()];
    let mut names = Vec::with_capacity(sheets.len());
    for (i, sheet) in sheets.iter().enumerate() {
        let name = unique_sheet_name(&clean_sheet_name(&sheet.name, i + 1), &taken);
        taken.push(name.to_lowercase());
        names.push(name);
    }
    names
}

fn clean_sheet_name(raw: &str, position: usize) -> String {
    let mapped: String = raw
        .chars()
        .filter_map(|c| match c {
            '[' => Some('('),
            ']' => Some(')'),
            ':' | '*' | '?' | '/' | '\\' => Some('_'),
            c if c.is_control() && c.is_whitespace() => Some(' '),
            c if c.is_control() || !is_xml_char(c) => None,
            c => Some(c),
        })
        .collect();
    // Excel rejects an apostrophe at either end (it quotes sheet names in formulas); cutting can expose a new one.
    let name = truncate_utf16(mapped.trim_matches('\''), MAX_SHEET_NAME).trim_end_matches('\'');
    if name.trim().is_empty() {
        format!("Sheet{position}")
    } else {
        name.to_string()
    }
}

/// `base`, or `base (2)`, `base (3)` …, with `base` cut so the whole stays within 31 units; `taken` is lower case.
fn unique_sheet_name(base: &str, taken: &[String]) -> String {
    let is_free = |name: &str| !taken.contains(&name.to_lowercase());
    if is_free(base) {
        return base.to_string();
    }
    let mut n = 2;
    loop {
        let suffix = format!(" ({n})");
        let candidate = format!("{}{suffix}", truncate_utf16(base, MAX_SHEET_NAME - suffix.len()));
        if is_free(&candidate) {
            return candidate;
        }
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::io::Read as _;

    /// A cell as a reader sees it.
    #[derive(Debug, Clone, PartialEq)]
    enum Read {
        /// A number, as spelled in the sheet's XML.
        Number(String),
        /// Text, and whether its style's font is bold.
        Text(String, bool),
    }

    impl Read {
        fn number(&self) -> f64 {
            match self {
                Read::Number(spelling) => spelling.parse().expect("a number"),
                other => panic!("expected a number, got {other:?}"),
            }
        }
    }

    /// One sheet as read back: its name, its cells by reference (`B2`) and its XML.
    struct ReadSheet {
        name: String,
        cells: BTreeMap<String, Read>,
        xml: String,
    }

    /// The workbook read back by a reader independent of the writer: the archive unzipped by the `zip` crate,
    /// the parts parsed by `roxmltree`, cells resolved through the shared strings and the styles' fonts, text
    /// decoded from SpreadsheetML's `_xHHHH_` escapes as Excel decodes it. Returns the parts in archive order.
    fn read_back(bytes: &[u8]) -> (Vec<(String, String)>, Vec<ReadSheet>) {
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a ZIP archive");
        let mut parts = Vec::new();
        for i in 0..archive.len() {
            let mut entry = archive.by_index(i).unwrap();
            let mut text = String::new();
            entry.read_to_string(&mut text).expect("UTF-8 part");
            parts.push((entry.name().expect("a UTF-8 name").to_string(), text));
        }
        let part = |name: &str| -> String {
            parts.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("missing part {name}")).1.clone()
        };
        for (name, text) in &parts {
            roxmltree::Document::parse(text).unwrap_or_else(|e| panic!("{name} is not well-formed XML: {e}"));
        }

        let strings: Vec<String> = match parts.iter().find(|(n, _)| n == "xl/sharedStrings.xml") {
            None => Vec::new(),
            Some((_, xml)) => {
                let doc = roxmltree::Document::parse(xml).unwrap();
                doc.descendants()
                    .filter(|n| n.has_tag_name("si"))
                    .map(|si| {
                        let raw: String =
                            si.descendants().filter(|n| n.has_tag_name("t")).filter_map(|t| t.text()).collect();
                        decode_xstring(&raw)
                    })
                    .collect()
            }
        };
        let styles_xml = part("xl/styles.xml");
        let styles = roxmltree::Document::parse(&styles_xml).unwrap();
        let child = |parent: &str| {
            styles
                .descendants()
                .find(|n| n.has_tag_name(parent))
                .unwrap()
                .children()
                .filter(|n| n.is_element())
                .collect::<Vec<_>>()
        };
        let bold_fonts: Vec<bool> = child("fonts").iter().map(|f| f.children().any(|n| n.has_tag_name("b"))).collect();
        let bold_styles: Vec<bool> = child("cellXfs")
            .iter()
            .map(|xf| bold_fonts[xf.attribute("fontId").unwrap().parse::<usize>().unwrap()])
            .collect();

        let workbook_xml = part("xl/workbook.xml");
        let workbook = roxmltree::Document::parse(&workbook_xml).unwrap();
        let rels_xml = part("xl/_rels/workbook.xml.rels");
        let rels = roxmltree::Document::parse(&rels_xml).unwrap();
        let mut sheets = Vec::new();
        for sheet in workbook.descendants().filter(|n| n.has_tag_name("sheet")) {
            let id = sheet.attributes().find(|a| a.name() == "id").unwrap().value();
            let target =
                rels.descendants().find(|r| r.attribute("Id") == Some(id)).and_then(|r| r.attribute("Target")).unwrap();
            let xml = part(&format!("xl/{target}"));
            let doc = roxmltree::Document::parse(&xml).unwrap();
            let mut cells = BTreeMap::new();
            for c in doc.descendants().filter(|n| n.has_tag_name("c")) {
                let value = c.children().find(|n| n.has_tag_name("v")).and_then(|v| v.text()).unwrap_or("");
                let bold = c.attribute("s").is_some_and(|s| bold_styles[s.parse::<usize>().unwrap()]);
                let cell = match c.attribute("t") {
                    None | Some("n") => Read::Number(value.to_string()),
                    Some("s") => Read::Text(strings[value.parse::<usize>().unwrap()].clone(), bold),
                    Some("inlineStr") => {
                        let raw: String =
                            c.descendants().filter(|n| n.has_tag_name("t")).filter_map(|t| t.text()).collect();
                        Read::Text(decode_xstring(&raw), bold)
                    }
                    Some(other) => panic!("unexpected cell type {other}"),
                };
                cells.insert(c.attribute("r").unwrap().to_string(), cell);
            }
            sheets.push(ReadSheet { name: sheet.attribute("name").unwrap().to_string(), cells, xml: xml.clone() });
        }
        (parts, sheets)
    }

    /// SpreadsheetML's ST_Xstring: `_xHHHH_` stands for the character U+HHHH (so a literal one is written with its
    /// underscore as `_x005F_`).
    fn decode_xstring(raw: &str) -> String {
        let mut out = String::new();
        let mut rest = raw;
        while let Some(at) = rest.find("_x") {
            out.push_str(&rest[..at]);
            let candidate = &rest[at..];
            let b = candidate.as_bytes();
            if b.len() >= 7 && b[2..6].iter().all(u8::is_ascii_hexdigit) && b[6] == b'_' {
                let code = u32::from_str_radix(&candidate[2..6], 16).unwrap();
                out.push(char::from_u32(code).expect("a character"));
                rest = &candidate[7..];
            } else {
                out.push_str("_x");
                rest = &candidate[2..];
            }
        }
        out.push_str(rest);
        out
    }

    fn sample() -> Vec<Sheet> {
        vec![
            Sheet {
                name: "absolute".into(),
                rows: vec![
                    vec![Cell::Bold("threads".into()), Cell::Bold("tps".into()), Cell::Bold("p95 [ms]".into())],
                    vec![Cell::Number(1.0), Cell::Number(1234.5), Cell::Number(f64::NAN)],
                    vec![Cell::Number(2.0), Cell::Empty, Cell::Text(" a<b & \"c\" 'd' ".into())],
                ],
                column_widths: vec![10.0, 12.5],
                freeze_header: true,
            },
            Sheet { name: "relative".into(), rows: vec![], column_widths: vec![], freeze_header: false },
        ]
    }

    /// One sheet with the given cells in its first row, read back.
    fn one_row(cells: Vec<Cell>) -> BTreeMap<String, Read> {
        let sheet = Sheet { name: "s".into(), rows: vec![cells], ..Sheet::default() };
        read_back(&workbook(&[sheet]).unwrap()).1.remove(0).cells
    }

    #[test]
    fn sheet_names_follow_excel_rules() {
        let named = |names: &[&str]| {
            let sheets: Vec<Sheet> = names.iter().map(|n| Sheet { name: n.to_string(), ..Sheet::default() }).collect();
            let names = sheet_names(&sheets);
            // The names given to the writer are the names a reader sees (the crate accepts every one).
            let read: Vec<String> = read_back(&workbook(&sheets).unwrap()).1.into_iter().map(|s| s.name).collect();
            assert_eq!(read, names);
            names
        };
        assert_eq!(named(&["a[1]:b*c?d/e\\f"]), ["a(1)_b_c_d_e_f"]);
        assert_eq!(named(&["", "  ", "\u{1}", "\t\n"]), ["Sheet1", "Sheet2", "Sheet3", "Sheet4"]);
        assert_eq!(named(&["a\tb\u{0}c\u{85}d\u{FFFF}"]), ["a bc d"]);
        assert_eq!(named(&["'quoted'", "''"]), ["quoted", "Sheet2"]);
        assert_eq!(named(&["Data", "data", "DATA"]), ["Data", "data (2)", "DATA (3)"]);
        assert_eq!(named(&["History"]), ["History (2)"]);
        assert_eq!(named(&["Sheet2", ""]), ["Sheet2", "Sheet2 (2)"]);

        let long = "x".repeat(40);
        let names = named(&[&long, &long, &long]);
        assert_eq!(names[0], "x".repeat(31));
        assert_eq!(names[1], format!("{} (2)", "x".repeat(27)));
        assert_eq!(names[2], format!("{} (3)", "x".repeat(27)));
        // Cutting exposes an apostrophe at the end: dropped too.
        assert_eq!(named(&[&format!("{}'abc", "y".repeat(30))]), ["y".repeat(30)]);
        // Limits count UTF-16 units: 16 emoji are 32 units, so only 15 fit.
        assert_eq!(named(&[&"😀".repeat(16)]), ["😀".repeat(15)]);
        for name in named(&[&long, "a", "A", "b/c", "[x]"]) {
            assert!(utf16_len(&name) <= MAX_SHEET_NAME && !name.is_empty());
        }
    }

    #[test]
    fn text_is_escaped_and_cleaned() {
        // XML's specials, CR (which a parser would turn into LF) and literal `_xHHHH_` sequences (which Excel would
        // decode) come back as written.
        for text in ["a&b<c>d\"e'f\rg\th\ni", "_x0041_ _x00g1_ x_y _x1234"] {
            assert_eq!(one_row(vec![Cell::Text(text.into())])["A1"], Read::Text(text.into(), false));
        }

        assert_eq!(cell_text("a\u{0}b\u{1b}c\u{7}\u{FFFE}\u{FFFF}d\te\nf\rg\u{1F600}"), "abcd\te\nf\rg\u{1F600}");
        let long = "é".repeat(MAX_CELL_TEXT + 10);
        let cut = cell_text(&long);
        assert_eq!(utf16_len(&cut), MAX_CELL_TEXT);
        assert!(cut.ends_with("é…"));
        let emoji = "😀".repeat(MAX_CELL_TEXT);
        let cut = cell_text(&emoji);
        assert!(utf16_len(&cut) <= MAX_CELL_TEXT && cut.ends_with("😀…"));
        let exact = "z".repeat(MAX_CELL_TEXT);
        assert_eq!(cell_text(&exact), exact);
        // The cleaned and cut texts are what the workbook holds.
        let cells =
            one_row(vec![Cell::Text("a\u{0}b\u{1b}c".into()), Cell::Text(long.clone()), Cell::Text(exact.clone())]);
        assert_eq!(cells["A1"], Read::Text("abc".into(), false));
        assert_eq!(cells["B1"], Read::Text(cell_text(&long), false));
        assert_eq!(cells["C1"], Read::Text(exact, false));
    }

    #[test]
    fn numbers_round_trip() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            1.0 / 3.0,
            1e21,
            1e-7,
            123456789.123,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            1e16,
        ];
        let cells = one_row(values.iter().map(|&x| Cell::Number(x)).collect());
        assert_eq!(cells.len(), values.len());
        for (i, x) in values.iter().enumerate() {
            let cell = &cells[&format!("{}1", (b'A' + i as u8) as char)];
            assert_eq!(cell.number().to_bits(), x.to_bits(), "{x} as {cell:?}");
            // A '.' or an exponent: readers that type a value by its spelling (openpyxl) give a float, not an int.
            let Read::Number(s) = cell else { unreachable!() };
            assert!(s.contains('.') || s.contains(['e', 'E']), "{s} reads as a float");
        }
        assert_eq!(cells["C1"], Read::Number("1.0".into()));
    }

    #[test]
    fn workbook_parts_and_cells() {
        let (parts, sheets) = read_back(&workbook(&sample()).unwrap());
        let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
        for expected in [
            "[Content_Types].xml",
            "_rels/.rels",
            "docProps/core.xml",
            "docProps/app.xml",
            "xl/workbook.xml",
            "xl/_rels/workbook.xml.rels",
            "xl/styles.xml",
            "xl/worksheets/sheet1.xml",
            "xl/worksheets/sheet2.xml",
        ] {
            assert!(names.contains(&expected), "{expected} in {names:?}");
        }
        assert_eq!(names[0], "[Content_Types].xml");
        let content_types = &parts[0].1;
        for name in names.iter().filter(|n| n.starts_with("xl/worksheets/")) {
            assert!(content_types.contains(&format!("PartName=\"/{name}\"")), "{name} has a content type");
        }

        assert_eq!(sheets.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["absolute", "relative"]);
        let sheet1 = &sheets[0];
        assert_eq!(sheet1.cells["A1"], Read::Text("threads".into(), true));
        assert_eq!(sheet1.cells["B2"].number(), 1234.5);
        assert_eq!(sheet1.cells["A3"].number(), 2.0);
        assert!(!sheet1.cells.contains_key("C2"), "NaN is an empty cell");
        assert!(!sheet1.cells.contains_key("B3"), "Empty is not written");
        assert_eq!(sheet1.cells["C3"], Read::Text(" a<b & \"c\" 'd' ".into(), false));
        assert_eq!(sheet1.cells.len(), 7);
        assert!(sheet1.xml.contains("<dimension ref=\"A1:C3\"/>"));
        assert!(sheet1.xml.contains("state=\"frozen\"") && sheet1.xml.contains("tabSelected=\"1\""));
        // The crate writes Excel's stored width (the given character width plus cell padding, in 1/256 steps).
        assert!(
            sheet1.xml.contains("<col min=\"2\" max=\"2\" width=\"13.28515625\" customWidth=\"1\"/>"),
            "{}",
            sheet1.xml
        );
        let sheet2 = &sheets[1];
        assert!(
            sheet2.cells.is_empty()
                && !sheet2.xml.contains("frozen")
                && !sheet2.xml.contains("tabSelected")
                && !sheet2.xml.contains("<cols>")
        );
    }

    #[test]
    fn output_is_deterministic() {
        assert_eq!(workbook(&sample()).unwrap(), workbook(&sample()).unwrap());
    }

    #[test]
    fn wide_and_long_sheets_use_the_right_references() {
        let mut row: Vec<Cell> = vec![Cell::Empty; 702];
        row.push(Cell::Number(7.0));
        let mut last_column = vec![Cell::Empty; MAX_COLUMNS - 1];
        last_column.push(Cell::Number(8.0));
        let sheet = Sheet { name: "wide".into(), rows: vec![vec![], row, last_column], ..Sheet::default() };
        let (_, sheets) = read_back(&workbook(&[sheet]).unwrap());
        let xml = &sheets[0].xml;
        assert_eq!(sheets[0].cells["AAA2"].number(), 7.0);
        assert_eq!(sheets[0].cells["XFD3"].number(), 8.0);
        assert_eq!(sheets[0].cells.len(), 2);
        assert!(!xml.contains("<row r=\"1\""), "empty rows are not written");
        assert!(xml.contains("<dimension ref=\"AAA2:XFD3\"/>"), "{xml}");
    }

    #[test]
    fn errors() {
        assert!(workbook(&[]).is_err());
        let mut row = vec![Cell::Empty; MAX_COLUMNS];
        row.push(Cell::Text("too far".into()));
        assert!(workbook(&[Sheet { rows: vec![row], ..Sheet::default() }]).unwrap_err().contains("column 16385"));
        let mut rows = vec![Vec::new(); MAX_ROWS];
        rows.push(vec![Cell::Number(1.0)]);
        assert!(workbook(&[Sheet { rows, ..Sheet::default() }]).unwrap_err().contains("row 1048577"));
        // Trailing empty cells beyond the grid are harmless: nothing is written there.
        let row = vec![Cell::Empty; MAX_COLUMNS + 5];
        assert!(workbook(&[Sheet { rows: vec![row], ..Sheet::default() }]).is_ok());
    }
}
