//! The refresh functions (spec clause 2.5): RF1 inserts SF × 1500 new
//! orders with their lineitems, RF2 deletes SF × 1500 old ones with theirs.
//!
//! dbgen writes these rows to update files (`-U`); the `tpchgen` crate does
//! not generate them, so dbbench makes update set *u* the way dbgen's key
//! layout allows: order keys are sparse (of every 32 keys dbgen uses 8; two
//! "sequence" bits stay 0 in the loaded data), so RF1 takes the loaded
//! data's orders with indexes [(u−1)·n, u·n) — real tpchgen rows, same
//! distributions — and gives them the key with sequence bits (u−1) mod 3 + 1,
//! which no loaded order has; RF2 deletes the loaded orders of that index
//! range (sequence bits 0). The shape, sizes and key ranges are the
//! specification's; the rows are not byte for byte dbgen's update files.

use super::gen::{self, LineFormat};
use super::schema::Table;
use crate::driver::Connection;
use tpchgen::generators::OrderGenerator;

/// Orders per refresh function at scale factor `sf` (clause 2.5.2: SF × 1500, at least 1).
pub fn orders_per_set(sf: f64) -> i64 {
    ((sf * 1500.0).round() as i64).max(1)
}

/// The loaded order indexes of update set `u` (1-based): [(u−1)·n, u·n), 1-based as tpchgen counts rows.
fn index_range(sf: f64, u: u32) -> (i64, i64) {
    let n = orders_per_set(sf);
    ((u as i64 - 1) * n + 1, u as i64 * n + 1)
}

/// The key a loaded order (index `i`) has.
fn base_key(i: i64) -> i64 {
    OrderGenerator::make_order_key(i)
}

/// The key update set `u` gives the order of index `i`: the same key with
/// the two sequence bits (bits 3 and 4) set to (u − 1) mod 3 + 1.
fn update_key(i: i64, u: u32) -> i64 {
    base_key(i) | (((u as i64 - 1) % 3 + 1) << 3)
}

/// The loaded data's lines of `table` (orders or lineitem) whose order key
/// is in [lo, hi], as load lines (pipe-separated, `\n`-terminated), with
/// the order key (first field) replaced by `rekey(key)`.
fn rows_between(table: Table, sf: f64, lo: i64, hi: i64, rekey: &dyn Fn(i64) -> i64) -> Vec<u8> {
    let mut out = Vec::new();
    gen::generate(table, sf, 1, 1, LineFormat::Load, 1 << 16, &mut |chunk| {
        let mut past = false;
        for line in chunk.split_inclusive(|&b| b == b'\n') {
            let end = line.iter().position(|&b| b == b'|').unwrap_or(line.len());
            let key: i64 = std::str::from_utf8(&line[..end]).ok().and_then(|k| k.parse().ok()).unwrap_or(-1);
            if key > hi {
                past = true;
                break;
            }
            if key >= lo {
                out.extend_from_slice(rekey(key).to_string().as_bytes());
                out.extend_from_slice(&line[end..]);
            }
        }
        // Rows come in key order: stop generating once past the range.
        !past
    });
    out
}

/// Inverse of `base_key` for keys of the loaded layout.
fn index_of(key: i64) -> i64 {
    ((key >> 5) << 3) | (key & 7)
}

/// RF1's rows for update set `u`, generated before RF1 is timed (dbgen
/// writes them to update files beforehand; the function measures the
/// database's work, not data generation).
pub struct Rf1Data {
    /// The update set.
    pub set: u32,
    /// New orders, as load lines.
    orders: Vec<u8>,
    /// Their lineitems, as load lines.
    lineitems: Vec<u8>,
}

/// Generates RF1's rows of update set `u`.
pub fn rf1_data(sf: f64, u: u32) -> Rf1Data {
    let (first, end) = index_range(sf, u);
    let (lo, hi) = (base_key(first), base_key(end - 1));
    let rekey = |key: i64| update_key(index_of(key), u);
    Rf1Data {
        set: u,
        orders: rows_between(Table::Orders, sf, lo, hi, &rekey),
        lineitems: rows_between(Table::Lineitem, sf, lo, hi, &rekey),
    }
}

/// RF1: the new orders and lineitems, loaded through the driver's bulk
/// path. Returns rows inserted (orders + lineitems).
pub fn rf1(conn: &mut dyn Connection, data: Rf1Data) -> anyhow::Result<u64> {
    use anyhow::Context;
    let u = data.set;
    let mut total = 0;
    for (table, rows) in [(Table::Orders, data.orders), (Table::Lineitem, data.lineitems)] {
        let mut rows = Some(rows);
        let columns: Vec<&str> = table.columns().iter().map(|(n, _)| *n).collect();
        total += conn
            .bulk_load_ascii(table.name(), &columns, &mut |buf: &mut Vec<u8>| match rows.take() {
                Some(d) => {
                    buf.extend_from_slice(&d);
                    true
                }
                None => false,
            })
            .with_context(|| format!("RF1 (update set {u}) into {}", table.name()))?;
    }
    Ok(total)
}

/// RF2 of update set `u`: deletes the loaded orders of its index range and
/// their lineitems, in batches of 1000 keys. Returns rows deleted.
pub fn rf2(conn: &mut dyn Connection, sf: f64, u: u32) -> anyhow::Result<u64> {
    let (first, end) = index_range(sf, u);
    let keys: Vec<i64> = (first..end).map(base_key).collect();
    let mut deleted = 0;
    for batch in keys.chunks(1000) {
        let list = batch.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(",");
        for (table, column) in [(Table::Lineitem, "l_orderkey"), (Table::Orders, "o_orderkey")] {
            match conn.query(&format!("DELETE FROM {} WHERE {column} IN ({list})", table.name())) {
                Ok(crate::driver::Outcome::Affected(n)) => deleted += n,
                Ok(_) => {}
                Err(e) => anyhow::bail!("RF2 (update set {u}) on {}: {e}", table.name()),
            }
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_keys_are_new_and_distinct() {
        // Loaded keys: 1..7, 32..39 ... (indexes 1.. map to sparse keys with bits 3-4 clear).
        assert_eq!((1..=9).map(base_key).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7, 32, 33]);
        for i in 1..5000 {
            assert_eq!(index_of(base_key(i)), i);
            assert_eq!(base_key(i) & 0b11000, 0);
        }
        let mut seen = std::collections::HashSet::new();
        for u in 1..=6 {
            let (a, b) = index_range(0.1, u);
            assert_eq!(b - a, 150);
            for i in a..b {
                let k = update_key(i, u);
                assert_ne!(k & 0b11000, 0, "update keys never collide with loaded ones");
                assert!(seen.insert(k), "update sets never reuse a key");
            }
        }
    }

    #[test]
    fn rf1_rows_are_the_loaded_rows_rekeyed() {
        let sf = 0.01;
        let (first, end) = index_range(sf, 1);
        let (lo, hi) = (base_key(first), base_key(end - 1));
        let orders =
            String::from_utf8(rows_between(Table::Orders, sf, lo, hi, &|k| update_key(index_of(k), 1))).unwrap();
        assert_eq!(orders.lines().count(), 15);
        assert!(orders.starts_with("9|"), "key 1 with sequence bits 01: 9; {orders}");
        let lines = String::from_utf8(rows_between(Table::Lineitem, sf, lo, hi, &|k| k)).unwrap();
        // Each order has 1..7 lines; all belong to the range.
        let n = lines.lines().count();
        assert!((15..=105).contains(&n), "{n}");
        assert!(lines.lines().all(|l| {
            let k: i64 = l.split('|').next().unwrap().parse().unwrap();
            (lo..=hi).contains(&k)
        }));
    }
}
