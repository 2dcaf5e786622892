//! Result decoding: rows of the text and the binary protocol into a `ResultSet`, and the
//! binary protocol's parameter types.

use std::io;

use super::protocol::push_fraction;
use super::wire::Buf;
use crate::driver::number_text::{f64_cell, write_int};
use crate::driver::{ResultSet, Value};

// Column types that need more than a length-encoded string in binary rows.
const T_TINY: u8 = 0x01;
const T_SHORT: u8 = 0x02;
const T_LONG: u8 = 0x03;
const T_FLOAT: u8 = 0x04;
const T_DOUBLE: u8 = 0x05;
const T_NULL: u8 = 0x06;
const T_TIMESTAMP: u8 = 0x07;
const T_LONGLONG: u8 = 0x08;
const T_INT24: u8 = 0x09;
const T_DATE: u8 = 0x0a;
const T_TIME: u8 = 0x0b;
const T_DATETIME: u8 = 0x0c;
const T_YEAR: u8 = 0x0d;
const T_NEWDATE: u8 = 0x0e;
const T_VAR_STRING: u8 = 0xfd;
const UNSIGNED_FLAG: u16 = 0x20;

/// Per-column facts needed to decode binary rows.
#[derive(Clone, Copy)]
pub(super) struct Col {
    pub(super) ty: u8,
    pub(super) flags: u16,
    pub(super) decimals: u8,
}

// `#[inline]` on both row decoders: called once per result row from
// `native::read_one_result`, in another module since the driver became a
// folder, where the compiler stopped inlining them; oltp_read_only then cost
// 6% more instructions per query (4335 -> 4596-4639, callgrind).
#[inline]
pub(super) fn decode_text_row(p: &[u8], ncols: usize, rs: &mut ResultSet) -> io::Result<()> {
    let mut b = Buf(p);
    for _ in 0..ncols {
        if b.0.first() == Some(&0xfb) {
            b.take(1)?;
            rs.push_null();
        } else {
            rs.push_bytes(b.lenenc_str()?);
        }
    }
    rs.end_row();
    Ok(())
}

#[inline]
pub(super) fn decode_binary_row(p: &[u8], cols: &[Col], rs: &mut ResultSet) -> io::Result<()> {
    let mut b = Buf(p);
    b.u8()?; // 0x00 header
    let bitmap = b.take((cols.len() + 9) / 8)?;
    for (i, c) in cols.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            rs.push_null();
            continue;
        }
        let unsigned = c.flags & UNSIGNED_FLAG != 0;
        let mut int = |v: i64, u: u64| {
            if unsigned {
                rs.push_with(|out| write_int(out, u));
            } else {
                rs.push_with(|out| write_int(out, v));
            }
        };
        let cell = match c.ty {
            T_TINY => {
                let v = b.u8()?;
                int(v as i8 as i64, v as u64);
                continue;
            }
            T_SHORT | T_YEAR => {
                let v = b.u16()?;
                int(v as i16 as i64, v as u64);
                continue;
            }
            T_LONG | T_INT24 => {
                let v = b.u32()?;
                int(v as i32 as i64, v as u64);
                continue;
            }
            T_LONGLONG => {
                let v = b.u64()?;
                int(v as i64, v);
                continue;
            }
            T_FLOAT => f32::from_bits(b.u32()?).to_string().into_bytes(),
            T_DOUBLE => f64_cell(f64::from_bits(b.u64()?)),
            T_NULL => {
                rs.push_null();
                continue;
            }
            T_DATE | T_NEWDATE | T_DATETIME | T_TIMESTAMP => {
                let n = b.u8()? as usize;
                let d = b.take(n)?;
                let g = |i: usize| d.get(i).copied().unwrap_or(0) as u32;
                let year = g(0) | g(1) << 8;
                let mut t = format!("{year:04}-{:02}-{:02}", g(2), g(3));
                if c.ty != T_DATE && c.ty != T_NEWDATE {
                    t.push_str(&format!(" {:02}:{:02}:{:02}", g(4), g(5), g(6)));
                    push_fraction(&mut t, g(7) | g(8) << 8 | g(9) << 16 | g(10) << 24, c.decimals);
                }
                t.into_bytes()
            }
            T_TIME => {
                let n = b.u8()? as usize;
                let d = b.take(n)?;
                let g = |i: usize| d.get(i).copied().unwrap_or(0) as u32;
                let days = g(1) | g(2) << 8 | g(3) << 16 | g(4) << 24;
                let mut t =
                    format!("{}{:02}:{:02}:{:02}", if g(0) == 1 { "-" } else { "" }, days * 24 + g(5), g(6), g(7));
                push_fraction(&mut t, g(8) | g(9) << 8 | g(10) << 16 | g(11) << 24, c.decimals);
                t.into_bytes()
            }
            _ => {
                rs.push_bytes(b.lenenc_str()?);
                continue;
            }
        };
        rs.push_bytes(&cell);
    }
    rs.end_row();
    Ok(())
}

/// Binary protocol type code of a parameter.
pub(super) fn param_type(v: &Value) -> u8 {
    match v {
        Value::Null => T_NULL,
        Value::Int(_) => T_LONGLONG,
        Value::Double(_) => T_DOUBLE,
        Value::Text(_) => T_VAR_STRING,
    }
}
