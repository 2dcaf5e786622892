//! TPC-H data from the `tpchgen` crate (byte-identical to dbgen): rows
//! written as dbgen's TBL lines, CSV, or the loaders' pipe-separated lines,
//! in chunks, for any part of a table, so that tables and parts are
//! generated in parallel and streamed straight into a database or to files.

use super::schema::Table;
use std::io::Write;
use std::path::{Path, PathBuf};
use tpchgen::csv::{CustomerCsv, LineItemCsv, NationCsv, OrderCsv, PartCsv, PartSuppCsv, RegionCsv, SupplierCsv};
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator, PartSuppGenerator,
    RegionGenerator, SupplierGenerator,
};

/// How rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// dbgen's `.tbl`: fields separated by `|`, every line ending with `|`.
    Tbl,
    /// CSV with a header line, text fields quoted (tpchgen's CSV).
    Csv,
    /// What `Connection::bulk_load` takes: fields separated by `|`, lines
    /// ending with `\n` (a TBL line without its last `|`).
    Load,
}

/// Rows of scale factor `sf` expected in `table` (lineitem: the mean of 4
/// lines per order; exact for the others). For progress and estimates.
pub fn expected_rows(table: Table, sf: f64) -> u64 {
    let per_sf = match table {
        Table::Region => return 5,
        Table::Nation => return 25,
        Table::Supplier => 10_000.0,
        Table::Customer => 150_000.0,
        Table::Part => 200_000.0,
        Table::Partsupp => 800_000.0,
        Table::Orders => 1_500_000.0,
        Table::Lineitem => 6_000_000.0,
    };
    (per_sf * sf).max(1.0) as u64
}

/// The first part whose suppliers repeat in dbgen's `partsupp` at scale
/// factor `sf`, as (part key, supplier key), or None when every
/// (ps_partkey, ps_suppkey) pair is distinct. dbgen picks part `p`'s i-th
/// supplier as `(p + i * (S/4 + (p-1)/S)) % S + 1` (S suppliers), so two
/// of a part's four coincide when a multiple of that step is a multiple
/// of S; that happens only at small scale factors (0.001, 0.012, ...), whose
/// data a primary key on partsupp refuses. The step is the same for each
/// run of S parts, so the first part of each run decides.
pub fn repeated_partsupp_key(sf: f64) -> Option<(i64, i64)> {
    let parts = PartGenerator::calculate_row_count(sf, 1, 1);
    // S as dbgen's bridge computes it.
    let suppliers = ((10_000.0 * sf) as i64).max(1);
    (1..=parts).step_by(suppliers as usize).find_map(|part| {
        let mut seen: Vec<i64> =
            (0..4).map(|i| tpchgen::generators::PartSuppGeneratorIterator::select_part_supplier(part, i, sf)).collect();
        seen.sort_unstable();
        seen.windows(2).find(|w| w[0] == w[1]).map(|w| (part, w[0]))
    })
}

/// Whether a table is split into parts: region and nation are fixed-size
/// and only ever written by part 1, as dbgen does.
pub fn is_partitioned(table: Table) -> bool {
    !matches!(table, Table::Region | Table::Nation)
}

/// Writes part `part` (1-based) of `parts` of `table` at scale factor `sf`
/// in `format`, handing over chunks of about `chunk_bytes` (whole lines)
/// to `sink`; stops early when `sink` returns false. Returns the rows written.
pub fn generate(
    table: Table,
    sf: f64,
    part: i32,
    parts: i32,
    format: LineFormat,
    chunk_bytes: usize,
    sink: &mut dyn FnMut(Vec<u8>) -> bool,
) -> u64 {
    if !is_partitioned(table) && part > 1 {
        return 0;
    }
    let mut w = Chunker { buf: Vec::with_capacity(chunk_bytes + 4096), chunk_bytes, format, rows: 0, sink, open: true };
    if format == LineFormat::Csv {
        let header = match table {
            Table::Region => RegionCsv::header(),
            Table::Nation => NationCsv::header(),
            Table::Supplier => SupplierCsv::header(),
            Table::Customer => CustomerCsv::header(),
            Table::Part => PartCsv::header(),
            Table::Partsupp => PartSuppCsv::header(),
            Table::Orders => OrderCsv::header(),
            Table::Lineitem => LineItemCsv::header(),
        };
        w.buf.extend_from_slice(header.as_bytes());
        w.buf.push(b'\n');
    }
    // Each table's generator yields its own row type; the macro writes any of them.
    macro_rules! rows {
        ($gen:expr, $csv:ident) => {
            for row in $gen.iter() {
                let open = if format == LineFormat::Csv { w.row(&$csv::new(row)) } else { w.row(&row) };
                if !open {
                    break;
                }
            }
        };
    }
    match table {
        Table::Region => rows!(RegionGenerator::new(sf, part, parts), RegionCsv),
        Table::Nation => rows!(NationGenerator::new(sf, part, parts), NationCsv),
        Table::Supplier => rows!(SupplierGenerator::new(sf, part, parts), SupplierCsv),
        Table::Customer => rows!(CustomerGenerator::new(sf, part, parts), CustomerCsv),
        Table::Part => rows!(PartGenerator::new(sf, part, parts), PartCsv),
        Table::Partsupp => rows!(PartSuppGenerator::new(sf, part, parts), PartSuppCsv),
        Table::Orders => rows!(OrderGenerator::new(sf, part, parts), OrderCsv),
        Table::Lineitem => rows!(LineItemGenerator::new(sf, part, parts), LineItemCsv),
    }
    w.flush();
    w.rows
}

/// Collects lines into chunks for a sink.
struct Chunker<'a> {
    buf: Vec<u8>,
    chunk_bytes: usize,
    format: LineFormat,
    rows: u64,
    sink: &'a mut dyn FnMut(Vec<u8>) -> bool,
    open: bool,
}

impl Chunker<'_> {
    /// Writes one row (its `Display` is the TBL or CSV line); false once the sink stopped taking chunks.
    fn row(&mut self, row: &dyn std::fmt::Display) -> bool {
        // Writing into a Vec cannot fail.
        let _ = write!(self.buf, "{row}");
        match self.format {
            LineFormat::Tbl => self.buf.push(b'\n'),
            LineFormat::Csv => self.buf.push(b'\n'),
            // A TBL line ends with `|`: it becomes the line's end.
            LineFormat::Load => {
                if let Some(last) = self.buf.last_mut() {
                    *last = b'\n';
                }
            }
        }
        self.rows += 1;
        if self.buf.len() >= self.chunk_bytes {
            self.flush();
        }
        self.open
    }

    fn flush(&mut self) {
        if !self.buf.is_empty() && self.open {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(self.chunk_bytes + 4096));
            self.open = (self.sink)(chunk);
        }
    }
}

/// The file one part of a table is written to, named as dbgen names them:
/// `lineitem.tbl`, or `lineitem.tbl.3` for part 3 of several.
pub fn file_name(dir: &Path, table: Table, format: LineFormat, part: i32, parts: i32) -> PathBuf {
    let ext = if format == LineFormat::Csv { "csv" } else { "tbl" };
    if parts > 1 && is_partitioned(table) {
        dir.join(format!("{}.{ext}.{part}", table.name()))
    } else {
        dir.join(format!("{}.{ext}", table.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(table: Table, sf: f64, part: i32, parts: i32, format: LineFormat) -> String {
        let mut out = Vec::new();
        generate(table, sf, part, parts, format, 1 << 16, &mut |c| {
            out.extend(c);
            true
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tbl_csv_and_load_lines() {
        let tbl = all(Table::Nation, 1.0, 1, 1, LineFormat::Tbl);
        assert_eq!(tbl.lines().count(), 25);
        assert!(
            tbl.starts_with("0|ALGERIA|0| haggle. carefully final deposits detect slyly agai|\n"),
            "{}",
            &tbl[..80]
        );
        let load = all(Table::Nation, 1.0, 1, 1, LineFormat::Load);
        assert!(
            load.starts_with("0|ALGERIA|0| haggle. carefully final deposits detect slyly agai\n"),
            "{}",
            &load[..80]
        );
        let csv = all(Table::Nation, 1.0, 1, 1, LineFormat::Csv);
        assert!(csv.starts_with("n_nationkey,n_name,n_regionkey,n_comment\n0,ALGERIA,0,\""), "{}", &csv[..80]);
        // Fixed tables come in part 1 only.
        assert_eq!(all(Table::Region, 1.0, 2, 4, LineFormat::Tbl), "");
    }

    #[test]
    fn parts_together_are_the_whole_table() {
        let whole = all(Table::Orders, 0.01, 1, 1, LineFormat::Tbl);
        let parts: String = (1..=3).map(|p| all(Table::Orders, 0.01, p, 3, LineFormat::Tbl)).collect();
        assert_eq!(whole.lines().count(), 15_000);
        assert_eq!(whole, parts);
        assert_eq!(expected_rows(Table::Orders, 0.01), 15_000);
    }

    #[test]
    fn a_sink_can_stop_the_generator() {
        let mut chunks = 0;
        let rows = generate(Table::Lineitem, 0.01, 1, 1, LineFormat::Load, 4096, &mut |_| {
            chunks += 1;
            chunks < 2
        });
        assert_eq!(chunks, 2);
        assert!(rows < 1000, "{rows}");
    }

    #[test]
    fn repeated_partsupp_keys_are_found_as_the_generated_table_has_them() {
        // Every (partkey, suppkey) pair of the generated table, checked
        // against the shortcut over runs of S parts, at the scale factors
        // where S is small enough for a step to divide it.
        let mut repeated = Vec::new();
        for s in 1..=300 {
            let sf = s as f64 / 10_000.0;
            let text = all(Table::Partsupp, sf, 1, 1, LineFormat::Load);
            let mut pairs: Vec<(i64, i64)> = text
                .lines()
                .map(|l| {
                    let mut f = l.split('|').map(|x| x.parse::<i64>().unwrap());
                    (f.next().unwrap(), f.next().unwrap())
                })
                .collect();
            let generated = pairs.len();
            pairs.sort_unstable();
            pairs.dedup();
            let found = repeated_partsupp_key(sf);
            assert_eq!(found.is_some(), pairs.len() < generated, "sf {sf}: {found:?}");
            if found.is_some() {
                repeated.push(s);
            }
        }
        // 0.001 and 0.012 among them, 0.01 not; none at the usual sizes.
        assert!(repeated.contains(&10) && repeated.contains(&120) && !repeated.contains(&100), "{repeated:?}");
        for sf in [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 100_000.0] {
            assert_eq!(repeated_partsupp_key(sf), None, "sf {sf}");
        }
    }
}
