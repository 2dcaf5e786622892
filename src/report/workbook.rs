//! A minimal Office Open XML workbook (.xlsx) writer: sheets of text and numbers, nothing else. `xlsx.rs` fills it
//! with the report's absolute and relative sheets (`dbbench report --export-xlsx`).
//!
//! Written with std only. An .xlsx file is a ZIP archive of small XML parts; the entries here are STORED
//! (uncompressed), which every reader accepts and which keeps the writer short. Text goes in inline strings
//! (`t="inlineStr"`) so no shared-strings table has to be built. The ZIP headers carry a fixed 1980-01-01
//! timestamp and the parts carry no dates, so the same sheets always give the same bytes (stored reports diff
//! cleanly and tests can compare bytes).

// Writing to a String cannot fail, hence the `let _ = write!(...)` throughout.
use std::fmt::Write as _;

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
/// or an archive that would need ZIP64 (4 GiB or more, or 65535 entries or more).
pub fn workbook(sheets: &[Sheet]) -> Result<Vec<u8>, String> {
    if sheets.is_empty() {
        return Err("xlsx: a workbook needs at least one sheet".to_string());
    }
    let names = sheet_names(sheets);
    let mut zip = ZipWriter::new(ZIP32_LIMIT);
    // [Content_Types].xml first: not required by OPC, but some sniffers look for it there.
    zip.add("[Content_Types].xml", content_types_xml(sheets.len()).as_bytes())?;
    zip.add("_rels/.rels", ROOT_RELS_XML.as_bytes())?;
    zip.add("docProps/core.xml", CORE_XML.as_bytes())?;
    zip.add("docProps/app.xml", APP_XML.as_bytes())?;
    zip.add("xl/workbook.xml", workbook_xml(&names).as_bytes())?;
    zip.add("xl/_rels/workbook.xml.rels", workbook_rels_xml(sheets.len()).as_bytes())?;
    zip.add("xl/styles.xml", STYLES_XML.as_bytes())?;
    for (i, (sheet, name)) in sheets.iter().zip(&names).enumerate() {
        let xml = worksheet_xml(sheet, i == 0).map_err(|e| format!("xlsx: sheet {name:?}: {e}"))?;
        zip.add(&format!("xl/worksheets/sheet{}.xml", i + 1), xml.as_bytes())?;
    }
    zip.finish()
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
/// Style indexes into `cellXfs` of `STYLES_XML`.
const STYLE_BOLD: u32 = 1;

const XML_DECL: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n";
const NS_MAIN: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const NS_REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const NS_PKG_REL: &str = "http://schemas.openxmlformats.org/package/2006/relationships";

const ROOT_RELS_XML: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n",
    "<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">",
    "<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/>",
    "<Relationship Id=\"rId2\" Type=\"http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties\" Target=\"docProps/core.xml\"/>",
    "<Relationship Id=\"rId3\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties\" Target=\"docProps/app.xml\"/>",
    "</Relationships>"
);

/// No creation date: it would make the output depend on the clock.
const CORE_XML: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n",
    "<cp:coreProperties xmlns:cp=\"http://schemas.openxmlformats.org/package/2006/metadata/core-properties\"",
    " xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:dcterms=\"http://purl.org/dc/terms/\"",
    " xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">",
    "<dc:creator>dbbench</dc:creator>",
    "</cp:coreProperties>"
);

const APP_XML: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n",
    "<Properties xmlns=\"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties\">",
    "<Application>dbbench</Application>",
    "</Properties>"
);

/// Font 0 is the default, font 1 its bold twin; cellXfs 0 is the default cell style, 1 (`STYLE_BOLD`) uses the
/// bold font. The two fills are the ones Excel insists on having at indexes 0 and 1.
const STYLES_XML: &str = concat!(
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n",
    "<styleSheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">",
    "<fonts count=\"2\">",
    "<font><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font>",
    "<font><b/><sz val=\"11\"/><name val=\"Calibri\"/><family val=\"2\"/></font>",
    "</fonts>",
    "<fills count=\"2\"><fill><patternFill patternType=\"none\"/></fill><fill><patternFill patternType=\"gray125\"/></fill></fills>",
    "<borders count=\"1\"><border><left/><right/><top/><bottom/><diagonal/></border></borders>",
    "<cellStyleXfs count=\"1\"><xf numFmtId=\"0\" fontId=\"0\" fillId=\"0\" borderId=\"0\"/></cellStyleXfs>",
    "<cellXfs count=\"2\">",
    "<xf numFmtId=\"0\" fontId=\"0\" fillId=\"0\" borderId=\"0\" xfId=\"0\"/>",
    "<xf numFmtId=\"0\" fontId=\"1\" fillId=\"0\" borderId=\"0\" xfId=\"0\" applyFont=\"1\"/>",
    "</cellXfs>",
    "<cellStyles count=\"1\"><cellStyle name=\"Normal\" xfId=\"0\" builtinId=\"0\"/></cellStyles>",
    "</styleSheet>"
);

fn content_types_xml(sheet_count: usize) -> String {
    let mut xml = String::from(XML_DECL);
    xml.push_str("<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">");
    xml.push_str(
        "<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>",
    );
    xml.push_str("<Default Extension=\"xml\" ContentType=\"application/xml\"/>");
    xml.push_str("<Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>");
    for n in 1..=sheet_count {
        let _ = write!(
            xml,
            "<Override PartName=\"/xl/worksheets/sheet{n}.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>"
        );
    }
    xml.push_str("<Override PartName=\"/xl/styles.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml\"/>");
    xml.push_str("<Override PartName=\"/docProps/core.xml\" ContentType=\"application/vnd.openxmlformats-package.core-properties+xml\"/>");
    xml.push_str("<Override PartName=\"/docProps/app.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.extended-properties+xml\"/>");
    xml.push_str("</Types>");
    xml
}

fn workbook_xml(names: &[String]) -> String {
    let mut xml = String::from(XML_DECL);
    let _ = write!(xml, "<workbook xmlns=\"{NS_MAIN}\" xmlns:r=\"{NS_REL}\">");
    xml.push_str("<bookViews><workbookView activeTab=\"0\"/></bookViews><sheets>");
    for (i, name) in names.iter().enumerate() {
        let _ = write!(xml, "<sheet name=\"{}\" sheetId=\"{n}\" r:id=\"rId{n}\"/>", xml_escape(name), n = i + 1);
    }
    xml.push_str("</sheets></workbook>");
    xml
}

/// Sheets are rId1..rIdN, matching their sheetId, so styles take rId(N+1).
fn workbook_rels_xml(sheet_count: usize) -> String {
    let mut xml = String::from(XML_DECL);
    let _ = write!(xml, "<Relationships xmlns=\"{NS_PKG_REL}\">");
    for n in 1..=sheet_count {
        let _ =
            write!(xml, "<Relationship Id=\"rId{n}\" Type=\"{NS_REL}/worksheet\" Target=\"worksheets/sheet{n}.xml\"/>");
    }
    let _ = write!(xml, "<Relationship Id=\"rId{}\" Type=\"{NS_REL}/styles\" Target=\"styles.xml\"/>", sheet_count + 1);
    xml.push_str("</Relationships>");
    xml
}

fn worksheet_xml(sheet: &Sheet, selected: bool) -> Result<String, String> {
    // sheetData is built first because <dimension>, which must precede it, needs the used range.
    let mut data = String::new();
    let (mut last_row, mut last_column) = (0, 0);
    for (r, row) in sheet.rows.iter().enumerate() {
        let row_number = r + 1;
        let mut row_open = false;
        for (c, cell) in row.iter().enumerate() {
            let column = c + 1;
            let (attributes, content) = match cell {
                Cell::Empty => continue,
                Cell::Number(x) if !x.is_finite() => continue,
                Cell::Number(x) => (String::new(), format!("<v>{}</v>", format_number(*x))),
                Cell::Text(raw) | Cell::Bold(raw) => {
                    let text = cell_text(raw);
                    if text.is_empty() {
                        continue;
                    }
                    let style =
                        if matches!(cell, Cell::Bold(_)) { format!(" s=\"{STYLE_BOLD}\"") } else { String::new() };
                    // Without xml:space="preserve" Excel strips leading and trailing whitespace.
                    let space = if text.starts_with(char::is_whitespace) || text.ends_with(char::is_whitespace) {
                        " xml:space=\"preserve\""
                    } else {
                        ""
                    };
                    (format!("{style} t=\"inlineStr\""), format!("<is><t{space}>{}</t></is>", xml_escape(&text)))
                }
            };
            if row_number > MAX_ROWS {
                return Err(format!("row {row_number} is beyond Excel's last row, {MAX_ROWS}"));
            }
            if column > MAX_COLUMNS {
                return Err(format!("column {column} is beyond Excel's last column, {MAX_COLUMNS} (XFD)"));
            }
            if !row_open {
                let _ = write!(data, "<row r=\"{row_number}\">");
                row_open = true;
            }
            last_row = row_number;
            last_column = last_column.max(column);
            let _ = write!(data, "<c r=\"{}{row_number}\"{attributes}>{content}</c>", column_letters(column));
        }
        if row_open {
            data.push_str("</row>");
        }
    }

    let mut xml = String::from(XML_DECL);
    let _ = write!(xml, "<worksheet xmlns=\"{NS_MAIN}\" xmlns:r=\"{NS_REL}\">");
    if last_row == 0 {
        xml.push_str("<dimension ref=\"A1\"/>");
    } else {
        let _ = write!(xml, "<dimension ref=\"A1:{}{last_row}\"/>", column_letters(last_column));
    }
    let _ =
        write!(xml, "<sheetViews><sheetView{} workbookViewId=\"0\">", if selected { " tabSelected=\"1\"" } else { "" });
    if sheet.freeze_header {
        xml.push_str("<pane ySplit=\"1\" topLeftCell=\"A2\" activePane=\"bottomLeft\" state=\"frozen\"/>");
        xml.push_str("<selection pane=\"bottomLeft\" activeCell=\"A2\" sqref=\"A2\"/>");
    }
    xml.push_str("</sheetView></sheetViews>");
    xml.push_str("<sheetFormatPr defaultRowHeight=\"15\"/>");
    let columns: String = sheet
        .column_widths
        .iter()
        .take(MAX_COLUMNS)
        .enumerate()
        .filter(|(_, w)| w.is_finite() && **w > 0.0)
        .map(|(i, w)| {
            format!(
                "<col min=\"{n}\" max=\"{n}\" width=\"{}\" customWidth=\"1\"/>",
                format_number(w.min(MAX_COLUMN_WIDTH)),
                n = i + 1
            )
        })
        .collect();
    if !columns.is_empty() {
        let _ = write!(xml, "<cols>{columns}</cols>");
    }
    if data.is_empty() {
        xml.push_str("<sheetData/>");
    } else {
        let _ = write!(xml, "<sheetData>{data}</sheetData>");
    }
    xml.push_str("</worksheet>");
    Ok(xml)
}

/// Excel's column name for a 1-based index: A..Z, AA..ZZ, AAA.. — bijective base 26, which has no zero digit,
/// so the letters cannot be computed as a plain base-26 number.
fn column_letters(index: usize) -> String {
    debug_assert!(index > 0, "columns are 1-based");
    let mut letters = Vec::new();
    let mut n = index;
    while n > 0 {
        n -= 1;
        letters.push(b'A' + (n % 26) as u8);
        n /= 26;
    }
    letters.iter().rev().map(|&b| b as char).collect()
}

/// Rust's Debug form of an f64 is the shortest string that parses back to the same value, and it always has a
/// '.' or an exponent, so readers that type a value by its spelling (openpyxl) give a float, not an int.
/// The exponent is upper case as Excel writes it; xsd:double accepts both.
fn format_number(x: f64) -> String {
    format!("{x:?}").replace('e', "E")
}

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

/// `text` escaped for XML content or attribute values. CR goes as a character reference because a parser
/// turns a literal CR into LF. `_xHHHH_` is SpreadsheetML's own escape (ST_Xstring), which Excel decodes in cell text
/// and names, so a literal one has its underscore written as `_x005F_` to survive.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '_' if starts_with_xstring_escape(&text[i..]) => out.push_str("_x005F_"),
            c => out.push(c),
        }
    }
    out
}

fn starts_with_xstring_escape(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 7 && b[0] == b'_' && b[1] == b'x' && b[2..6].iter().all(u8::is_ascii_hexdigit) && b[6] == b'_'
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

/// Largest archive without ZIP64: offsets and sizes are u32 fields, and 0xFFFFFFFF itself means "see ZIP64".
const ZIP32_LIMIT: u64 = u32::MAX as u64;
/// Likewise for the u16 entry count.
const ZIP32_MAX_ENTRIES: usize = u16::MAX as usize - 1;
/// Version 2.0: the minimum for a reader that handles these headers; also given as "made by" (MS-DOS attributes).
const ZIP_VERSION: u16 = 20;
/// General purpose flag bit 11: names are UTF-8.
const ZIP_FLAG_UTF8: u16 = 1 << 11;
const ZIP_METHOD_STORED: u16 = 0;
/// MS-DOS date 1980-01-01 (the earliest it can express): (year - 1980) << 9 | month << 5 | day; time 00:00:00 is 0.
const ZIP_DOS_DATE: u16 = (1 << 5) | 1;
const ZIP_DOS_TIME: u16 = 0;
const ZIP_LOCAL_HEADER: u32 = 0x0403_4b50;
const ZIP_CENTRAL_HEADER: u32 = 0x0201_4b50;
const ZIP_END_OF_CENTRAL_DIRECTORY: u32 = 0x0605_4b50;
const ZIP_LOCAL_HEADER_LEN: u64 = 30;
const ZIP_END_LEN: u64 = 22;

/// A ZIP archive of STORED entries built in memory: local headers and data go into `bytes` as entries are added,
/// their central directory records collect in `central` and are appended by `finish`.
struct ZipWriter {
    bytes: Vec<u8>,
    central: Vec<u8>,
    entries: usize,
    /// The archive must stay below this many bytes; a field so tests can check the overflow path cheaply.
    limit: u64,
}

impl ZipWriter {
    fn new(limit: u64) -> Self {
        ZipWriter { bytes: Vec::new(), central: Vec::new(), entries: 0, limit }
    }

    fn add(&mut self, name: &str, data: &[u8]) -> Result<(), String> {
        let offset = self.bytes.len() as u64;
        let end = offset + ZIP_LOCAL_HEADER_LEN + name.len() as u64 + data.len() as u64;
        if end >= self.limit {
            return Err(format!(
                "xlsx: the workbook would exceed {} bytes, the most a ZIP archive without ZIP64 can hold",
                self.limit
            ));
        }
        if self.entries >= ZIP32_MAX_ENTRIES {
            return Err(format!(
                "xlsx: more than {ZIP32_MAX_ENTRIES} parts, the most a ZIP archive without ZIP64 can hold"
            ));
        }
        // Both fit: they are below `limit`, which is at most u32::MAX; a name is far shorter than u16::MAX.
        let (offset, size, name_len) = (offset as u32, data.len() as u32, name.len() as u16);
        let crc = crc32(data);

        let local = &mut self.bytes;
        put_u32(local, ZIP_LOCAL_HEADER);
        put_u16(local, ZIP_VERSION);
        put_u16(local, ZIP_FLAG_UTF8);
        put_u16(local, ZIP_METHOD_STORED);
        put_u16(local, ZIP_DOS_TIME);
        put_u16(local, ZIP_DOS_DATE);
        put_u32(local, crc);
        put_u32(local, size); // compressed size: STORED, so the same
        put_u32(local, size);
        put_u16(local, name_len);
        put_u16(local, 0); // extra field length
        local.extend_from_slice(name.as_bytes());
        local.extend_from_slice(data);

        let central = &mut self.central;
        put_u32(central, ZIP_CENTRAL_HEADER);
        put_u16(central, ZIP_VERSION); // made by
        put_u16(central, ZIP_VERSION); // needed to extract
        put_u16(central, ZIP_FLAG_UTF8);
        put_u16(central, ZIP_METHOD_STORED);
        put_u16(central, ZIP_DOS_TIME);
        put_u16(central, ZIP_DOS_DATE);
        put_u32(central, crc);
        put_u32(central, size);
        put_u32(central, size);
        put_u16(central, name_len);
        put_u16(central, 0); // extra field length
        put_u16(central, 0); // comment length
        put_u16(central, 0); // disk number start
        put_u16(central, 0); // internal attributes
        put_u32(central, 0); // external attributes
        put_u32(central, offset);
        central.extend_from_slice(name.as_bytes());

        self.entries += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<u8>, String> {
        let central_offset = self.bytes.len() as u64;
        let central_len = self.central.len() as u64;
        if central_offset + central_len + ZIP_END_LEN >= self.limit {
            return Err(format!(
                "xlsx: the workbook would exceed {} bytes, the most a ZIP archive without ZIP64 can hold",
                self.limit
            ));
        }
        self.bytes.append(&mut self.central);
        let out = &mut self.bytes;
        put_u32(out, ZIP_END_OF_CENTRAL_DIRECTORY);
        put_u16(out, 0); // this disk
        put_u16(out, 0); // disk where the central directory starts
        put_u16(out, self.entries as u16); // entries on this disk
        put_u16(out, self.entries as u16); // entries in all
        put_u32(out, central_len as u32);
        put_u32(out, central_offset as u32);
        put_u16(out, 0); // comment length
        Ok(self.bytes)
    }
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// CRC-32 as ZIP uses it (IEEE 802.3, reflected polynomial 0xEDB88320, initial value and final XOR all ones),
/// one table lookup per byte.
fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |crc, &b| CRC32_TABLE[((crc ^ b as u32) & 0xFF) as usize] ^ (crc >> 8))
}

/// Entry i is the CRC register after shifting byte i through eight rounds of the polynomial.
const CRC32_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { 0xEDB8_8320 ^ (crc >> 1) } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    /// A reader independent of `ZipWriter`: walks the central directory from the end record and checks each entry
    /// against its local header and its data (CRC, sizes), and that entries and directory tile the archive exactly.
    fn read_zip(zip: &[u8]) -> Vec<(String, Vec<u8>)> {
        let end = zip.len() - ZIP_END_LEN as usize;
        assert_eq!(u32_at(zip, end), 0x0605_4b50, "end of central directory signature");
        assert_eq!(u16_at(zip, end + 20), 0, "no archive comment");
        let entries = u16_at(zip, end + 10) as usize;
        assert_eq!(u16_at(zip, end + 8), entries as u16);
        let central_len = u32_at(zip, end + 12) as usize;
        let central_offset = u32_at(zip, end + 16) as usize;
        assert_eq!(central_offset + central_len, end, "central directory ends where the end record starts");

        let mut out = Vec::new();
        let mut at = central_offset;
        let mut next_local = 0;
        for _ in 0..entries {
            assert_eq!(u32_at(zip, at), 0x0201_4b50, "central header signature");
            let flags = u16_at(zip, at + 8);
            assert_eq!(u16_at(zip, at + 10), 0, "STORED");
            let crc = u32_at(zip, at + 16);
            let compressed = u32_at(zip, at + 20) as usize;
            let size = u32_at(zip, at + 24) as usize;
            assert_eq!(compressed, size);
            let name_len = u16_at(zip, at + 28) as usize;
            let extra_len = u16_at(zip, at + 30) as usize;
            let comment_len = u16_at(zip, at + 32) as usize;
            let local = u32_at(zip, at + 42) as usize;
            let name = std::str::from_utf8(&zip[at + 46..at + 46 + name_len]).expect("UTF-8 name").to_string();
            at += 46 + name_len + extra_len + comment_len;

            assert_eq!(local, next_local, "entries follow each other without gaps");
            assert_eq!(u32_at(zip, local), 0x0403_4b50, "local header signature");
            assert_eq!(u16_at(zip, local + 6), flags);
            assert_eq!(u16_at(zip, local + 12), 0x21, "DOS date 1980-01-01");
            assert_eq!(u32_at(zip, local + 14), crc);
            assert_eq!(u32_at(zip, local + 18) as usize, compressed);
            assert_eq!(u32_at(zip, local + 22) as usize, size);
            let local_name_len = u16_at(zip, local + 26) as usize;
            let local_extra_len = u16_at(zip, local + 28) as usize;
            assert_eq!(&zip[local + 30..local + 30 + local_name_len], name.as_bytes());
            let data_start = local + 30 + local_name_len + local_extra_len;
            let data = zip[data_start..data_start + size].to_vec();
            assert_eq!(crc32(&data), crc, "CRC of {name}");
            next_local = data_start + size;
            out.push((name, data));
        }
        assert_eq!(at, end, "central directory holds exactly `entries` records");
        assert_eq!(next_local, central_offset, "data ends where the central directory starts");
        out
    }

    fn part(parts: &[(String, Vec<u8>)], name: &str) -> String {
        let (_, data) = parts.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("missing part {name}"));
        String::from_utf8(data.clone()).expect("UTF-8 part")
    }

    /// Tags balance and every entity is a known one: catches broken markup without an XML parser.
    fn assert_well_formed(xml: &str) {
        let body = xml.strip_prefix(XML_DECL).expect("XML declaration");
        let mut open: Vec<&str> = Vec::new();
        let mut rest = body;
        while let Some(start) = rest.find('<') {
            check_text(&rest[..start]);
            let end = start + rest[start..].find('>').expect("unclosed tag");
            let tag = &rest[start + 1..end];
            let name = tag.trim_start_matches('/').split([' ', '/']).next().unwrap();
            if let Some(closing) = tag.strip_prefix('/') {
                assert_eq!(open.pop(), Some(closing), "mismatched close in {xml}");
            } else if !tag.ends_with('/') {
                open.push(name);
            }
            check_text(tag);
            rest = &rest[end + 1..];
        }
        check_text(rest);
        assert!(open.is_empty(), "unclosed {open:?}");
        assert!(!body.is_empty());
    }

    fn check_text(text: &str) {
        assert!(!text.contains('<'));
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..i + text[i..].find(';').expect("entity without ;") + 1];
            assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#13;"].contains(&entity), "entity {entity}");
        }
        assert!(text.chars().all(is_xml_char));
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

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"The quick brown fox jumps over the lazy dog"), 0x414F_A339);
    }

    #[test]
    fn column_letters_are_bijective_base_26() {
        let cases =
            [(1, "A"), (2, "B"), (26, "Z"), (27, "AA"), (28, "AB"), (52, "AZ"), (53, "BA"), (702, "ZZ"), (703, "AAA")];
        for (n, letters) in cases {
            assert_eq!(column_letters(n), letters, "column {n}");
        }
        assert_eq!(column_letters(MAX_COLUMNS), "XFD");
        assert_eq!(column_letters(18_278), "ZZZ");
    }

    #[test]
    fn sheet_names_follow_excel_rules() {
        let named = |names: &[&str]| {
            let sheets: Vec<Sheet> = names.iter().map(|n| Sheet { name: n.to_string(), ..Sheet::default() }).collect();
            sheet_names(&sheets)
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
        assert_eq!(xml_escape("a&b<c>d\"e'f\rg\th\ni"), "a&amp;b&lt;c&gt;d&quot;e&apos;f&#13;g\th\ni");
        assert_eq!(xml_escape("_x0041_ _x00g1_ x_y _x1234"), "_x005F_x0041_ _x00g1_ x_y _x1234");

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
        for x in values {
            let s = format_number(x);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{x} as {s}");
            assert!(s.contains('.') || s.contains('E'), "{s} reads as a float");
            assert!(!s.contains('e'));
        }
        assert_eq!(format_number(1.0), "1.0");
        assert_eq!(format_number(1e21), "1E21");
    }

    #[test]
    fn workbook_parts_and_cells() {
        let zip = workbook(&sample()).unwrap();
        let parts = read_zip(&zip);
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
        assert_eq!(names.len(), 9);
        assert_eq!(names[0], "[Content_Types].xml");
        for (name, data) in &parts {
            let xml = std::str::from_utf8(data).unwrap();
            assert_well_formed(xml);
            if name.ends_with(".xml") && name.starts_with("xl/worksheets/") {
                assert!(part(&parts, "[Content_Types].xml").contains(&format!("PartName=\"/{name}\"")));
            }
        }

        let workbook_xml = part(&parts, "xl/workbook.xml");
        assert!(workbook_xml.contains("<sheet name=\"absolute\" sheetId=\"1\" r:id=\"rId1\"/>"));
        assert!(workbook_xml.contains("<sheet name=\"relative\" sheetId=\"2\" r:id=\"rId2\"/>"));
        let rels = part(&parts, "xl/_rels/workbook.xml.rels");
        assert!(rels.contains("Id=\"rId3\"") && rels.contains("Target=\"styles.xml\""));

        let sheet1 = part(&parts, "xl/worksheets/sheet1.xml");
        assert!(sheet1.contains("<c r=\"A1\" s=\"1\" t=\"inlineStr\"><is><t>threads</t></is></c>"));
        assert!(sheet1.contains("<c r=\"B2\"><v>1234.5</v></c>"));
        assert!(!sheet1.contains("C2"), "NaN is an empty cell");
        assert!(!sheet1.contains("B3"), "Empty is not written");
        assert!(sheet1.contains("<c r=\"C3\" t=\"inlineStr\"><is><t xml:space=\"preserve\"> a&lt;b &amp; &quot;c&quot; &apos;d&apos; </t></is></c>"));
        assert!(sheet1.contains("<dimension ref=\"A1:C3\"/>"));
        assert!(sheet1.contains("state=\"frozen\"") && sheet1.contains("tabSelected=\"1\""));
        assert!(sheet1.contains("<col min=\"2\" max=\"2\" width=\"12.5\" customWidth=\"1\"/>"));
        let sheet2 = part(&parts, "xl/worksheets/sheet2.xml");
        assert!(
            sheet2.contains("<sheetData/>")
                && !sheet2.contains("frozen")
                && !sheet2.contains("tabSelected")
                && !sheet2.contains("<cols>")
        );

        let styles = part(&parts, "xl/styles.xml");
        assert!(styles.contains("<font><b/>"));
    }

    #[test]
    fn output_is_deterministic() {
        assert_eq!(workbook(&sample()).unwrap(), workbook(&sample()).unwrap());
    }

    #[test]
    fn wide_and_long_sheets_use_the_right_references() {
        let mut row: Vec<Cell> = vec![Cell::Empty; 702];
        row.push(Cell::Number(7.0));
        let sheet = Sheet { name: "wide".into(), rows: vec![vec![], row], ..Sheet::default() };
        let parts = read_zip(&workbook(&[sheet]).unwrap());
        let xml = part(&parts, "xl/worksheets/sheet1.xml");
        assert!(xml.contains("<row r=\"2\"><c r=\"AAA2\"><v>7.0</v></c></row>"), "{xml}");
        assert!(!xml.contains("<row r=\"1\""), "empty rows are not written");
        assert!(xml.contains("<dimension ref=\"A1:AAA2\"/>"));
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

        let mut zip = ZipWriter::new(100);
        zip.add("a", &[0; 40]).unwrap();
        assert!(zip.add("b", &[0; 40]).unwrap_err().contains("exceed 100 bytes"));
        let mut zip = ZipWriter::new(100);
        zip.add("a", &[0; 40]).unwrap();
        assert!(zip.finish().is_err(), "71 bytes of entry + 47 of directory and end record");
    }
}
