//! Shards of one run (issue 23; docs/scale-out.md): `run --shard=I/N` runs
//! the I-th part of a run — its contiguous share of `--threads` with their
//! global thread ids, its share of `--events` and `--rate` — and writes a
//! mergeable result (`--shard-result=PATH|-`, [`result::ShardResult`]);
//! `--start-at=T` holds the ready clients until T so that N processes on N
//! hosts begin measuring together; `dbbench merge` ([`merge`]) adds the
//! results up into the report one process with all clients would have
//! printed.
//!
//! Only the engine's `run` knows about shards; the split is computed here
//! once, from the options, into [`Shard`].

pub mod check;
pub mod merge;
pub mod result;
pub mod series;

use crate::options::Options;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The environment variable a Kubernetes Indexed Job sets to the pod's
/// index: `--shard=job/N` takes I from it.
pub const JOB_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The prefix of the one line `--shard-result=-` prints on stdout (after
/// the run's report), which `dbbench merge` finds in saved logs.
pub const LINE_PREFIX: &str = "dbbench-shard-result: ";

/// What this process runs of a sharded run.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// I (0 ≤ I < N).
    pub index: u32,
    /// N.
    pub count: u32,
    /// Global id of this shard's first client (`sysbench.tid`).
    pub first_tid: u32,
    /// Clients this shard runs (ids `first_tid..first_tid + threads`).
    pub threads: u32,
    /// The whole run's `--threads`, `--events` and `--rate`.
    pub total_threads: u32,
    /// See `total_threads`.
    pub total_events: u64,
    /// See `total_threads`.
    pub total_rate: f64,
    /// This shard's share of `--events` (0 = no limit) and `--rate`.
    pub events: u64,
    /// See `events`.
    pub rate: f64,
    /// `--start-at`, unix epoch milliseconds.
    pub start_at_ms: Option<i64>,
    /// `--shard-result`: where the result goes (None: nowhere).
    pub result: Option<Destination>,
}

/// Where `--shard-result` writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// `-`: one line on stdout after the report.
    Stdout,
    /// A file, written private (0600) and atomically, never through a symlink.
    File(std::path::PathBuf),
}

/// `n` split over `count` parts so that the parts add up to `n`: part `i`'s
/// (first, length), the first `n % count` parts one larger.
pub fn split(n: u64, count: u32, i: u32) -> (u64, u64) {
    let (c, i) = (count as u64, i as u64);
    let (base, extra) = (n / c, n % c);
    (i * base + i.min(extra), base + u64::from(i < extra))
}

/// The shard options of a run (`--shard`, `--shard-result`, `--start-at`)
/// against its `--threads`, `--events` and `--rate`: None when `--shard` is
/// not given. Errors are one FATAL line.
pub fn from_options(opts: &Options, threads: u32, events: u64, rate: f64) -> Result<Option<Shard>, String> {
    let spec = opts.str("shard").trim().to_string();
    let start_at = opts.str("start_at").trim().to_string();
    let dest = opts.str("shard_result").trim().to_string();
    if spec.is_empty() {
        for name in ["shard-result", "start-at"] {
            if opts.given(name) {
                return Err(format!("FATAL: --{name} needs --shard=I/N (this process's part of a sharded run)"));
            }
        }
        return Ok(None);
    }
    let bad = || {
        format!("FATAL: Invalid value for --shard: '{spec}' (use I/N with 0 <= I < N, e.g. 0/4, or job/N to take I from ${JOB_INDEX_ENV})")
    };
    let (i, n) = spec.split_once('/').ok_or_else(bad)?;
    let count: u32 = n.trim().parse().ok().filter(|n| (1..=1_000_000).contains(n)).ok_or_else(bad)?;
    let index: u32 = if i.trim() == "job" {
        let v = std::env::var(JOB_INDEX_ENV).map_err(|_| {
            format!("FATAL: --shard={spec} takes the shard's index from ${JOB_INDEX_ENV}, which is not set (a Kubernetes Indexed Job sets it; elsewhere give --shard=I/{count})")
        })?;
        v.trim().parse().ok().filter(|i| *i < count).ok_or_else(|| {
            format!("FATAL: ${JOB_INDEX_ENV} is '{v}', not a shard index from 0 to {} (--shard={spec})", count - 1)
        })?
    } else {
        i.trim().parse().ok().filter(|i| *i < count).ok_or_else(bad)?
    };
    if threads < count {
        return Err(format!(
            "FATAL: --threads={threads} cannot be split over {count} shards: every shard needs at least one client (raise --threads or use fewer shards)"
        ));
    }
    if events > 0 && events < count as u64 {
        return Err(format!(
            "FATAL: --events={events} cannot be split over {count} shards: every shard needs at least one event (0 would mean no limit)"
        ));
    }
    let (first, share) = split(threads as u64, count, index);
    let (_, events_share) = split(events, count, index);
    // Every shard but the last takes rate/N; the last the rest, so the
    // shares add up to --rate.
    let per = rate / count as f64;
    let rate_share = if index + 1 == count { rate - per * (count - 1) as f64 } else { per };
    let start_at_ms = if !opts.given("start_at") {
        None
    } else {
        let max_ahead_s = opts.int("start_at_max_wait").max(0) as u64;
        let t = parse_start_at(&start_at)
            .and_then(|t| within_window(t, now_unix_ms(), max_ahead_s))
            .map_err(|e| format!("FATAL: Invalid value for --start-at: '{start_at}': {e}"))?;
        Some(t)
    };
    let result = match dest.as_str() {
        "" => None,
        "-" => Some(Destination::Stdout),
        p => Some(Destination::File(p.into())),
    };
    Ok(Some(Shard {
        index,
        count,
        first_tid: first as u32,
        threads: share as u32,
        total_threads: threads,
        total_events: events,
        total_rate: rate,
        events: events_share,
        rate: rate_share,
        start_at_ms,
        result,
    }))
}

/// How far in the past `--start-at` may lie: a shard ready after its
/// start begins at once (and is `late`), but a start a day ago is a typo
/// (seconds for milliseconds, a wrong year), not a late shard.
pub const START_AT_MAX_PAST_MS: i64 = 86_400_000;

/// The wait for `--start-at` above which the shard says what it waits for.
pub const START_AT_ANNOUNCE_MS: f64 = 5_000.0;

/// `--start-at`: unix epoch milliseconds (digits), or RFC 3339
/// (`2026-11-27T09:00:00Z`, `2026-11-27T10:00:00.250+01:00`).
pub fn parse_start_at(s: &str) -> Result<i64, String> {
    if s.is_empty() {
        return Err("empty; use unix epoch milliseconds (e.g. 1795770000000) or RFC 3339 (e.g. 2026-11-27T09:00:00Z), or leave --start-at out".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| "too large for milliseconds since 1970".to_string());
    }
    parse_rfc3339(s).ok_or_else(|| {
        "use unix epoch milliseconds (e.g. 1795770000000) or RFC 3339 (e.g. 2026-11-27T09:00:00Z)".to_string()
    })
}

/// `t` (unix epoch ms) if it lies from [`START_AT_MAX_PAST_MS`] before
/// `now_ms` to `max_ahead_s` after it; else why not.
pub fn within_window(t: i64, now_ms: f64, max_ahead_s: u64) -> Result<i64, String> {
    let ahead_ms = t as f64 - now_ms;
    if ahead_ms < -(START_AT_MAX_PAST_MS as f64) {
        return Err(format!(
            "{} is more than a day in the past (unix epoch milliseconds: a start in seconds reads as 1970)",
            rfc3339(t)
        ));
    }
    if ahead_ms > max_ahead_s as f64 * 1e3 {
        return Err(format!(
            "{} is {:.1} hours ahead, more than --start-at-max-wait={max_ahead_s} s allows (a typo in the date?); raise --start-at-max-wait to wait that long",
            rfc3339(t),
            ahead_ms / 3.6e6
        ));
    }
    Ok(t)
}

/// Unix epoch milliseconds as RFC 3339 in UTC (`2026-11-27T09:00:00.250Z`).
pub fn rfc3339(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Civil date from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s, frac) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60, in_day % 1000);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac:03}Z")
}

/// RFC 3339 date-time to unix epoch milliseconds (fractions below a
/// millisecond are dropped).
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut ms = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let f = &frac[..digits];
        ms = format!("{:0<3}", &f[..digits.min(3)]).parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && matches!(&o[..1], "+" | "-") && &o[3..4] == ":" => {
            // RFC 3339's offsets: hours 00-23, minutes 00-59.
            let (oh, om) = (num(s.len() - 5..s.len() - 3)?, num(s.len() - 2..s.len())?);
            if oh > 23 || om > 59 {
                return None;
            }
            let v = oh * 60 + om;
            if &o[..1] == "-" {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60) * 1000) + ms)
}

/// The wall clock, unix epoch milliseconds (fractional).
pub fn now_unix_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0)
}

/// Sleeps until the wall clock reads `at_ms` (unix epoch ms); returns at
/// once when it has passed.
pub fn wait_until(at_ms: i64) {
    loop {
        let left = at_ms as f64 - now_unix_ms();
        if left <= 0.0 {
            return;
        }
        // Long sleeps in steps, so that a clock set meanwhile is noticed.
        std::thread::sleep(Duration::from_secs_f64((left / 1e3).min(0.5)));
    }
}

/// This host's name (a pod's name under Kubernetes).
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The offset of this host's wall clock from the database server's, which
/// every shard of a run shares: the server's time (`NOW(6)` on
/// MariaDB/MySQL, `clock_timestamp()` on PostgreSQL) minus the midpoint of
/// the round trip that asked for it, from the quickest of five round trips.
/// None for SQLite (the database is this process) or when it cannot be
/// asked (the reason is returned for the result).
pub fn measure_clock_offset(opts: &Options) -> Result<result::ClockOffset, String> {
    let driver = opts.str("db_driver");
    let (sql, against) = match driver {
        "mysql" => ("SELECT UNIX_TIMESTAMP(NOW(6))", "the database server's NOW(6)"),
        "pgsql" => ("SELECT extract(epoch from clock_timestamp())", "the database server's clock_timestamp()"),
        other => return Err(format!("not measured: the {other} driver has no server clock")),
    };
    let d = crate::driver::create(driver, opts)?;
    let mut conn = d.connect().map_err(|e| format!("not measured: cannot connect: {e}"))?;
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..5 {
        let t0 = now_unix_ms();
        let out = conn.query(sql).map_err(|e| format!("not measured: {e}"))?;
        let t1 = now_unix_ms();
        let crate::driver::Outcome::Rows(rs) = out else { return Err("not measured: no row".into()) };
        let cell = rs.text_rows().into_iter().next().and_then(|r| r.into_iter().next().flatten());
        let server_s: f64 = cell.and_then(|c| c.trim().parse().ok()).ok_or("not measured: not a time")?;
        let (rtt, offset) = (t1 - t0, server_s * 1e3 - (t0 + t1) / 2.0);
        if best.is_none_or(|(r, _)| rtt < r) {
            best = Some((rtt, offset));
        }
    }
    let (rtt_ms, offset_ms) = best.ok_or("not measured")?;
    Ok(result::ClockOffset { against: against.into(), offset_ms, rtt_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_add_up_and_are_contiguous() {
        for n in [0u64, 1, 7, 16, 1001] {
            for count in 1..=9u32 {
                let mut next = 0;
                let mut total = 0;
                for i in 0..count {
                    let (first, len) = split(n, count, i);
                    assert_eq!(first, next, "n={n} count={count} i={i}");
                    next += len;
                    total += len;
                }
                assert_eq!(total, n);
            }
        }
        assert_eq!(split(10, 4, 0), (0, 3));
        assert_eq!(split(10, 4, 3), (8, 2));
    }

    #[test]
    fn start_at_accepts_epoch_ms_and_rfc3339() {
        assert_eq!(parse_start_at("1795770000000"), Ok(1_795_770_000_000));
        assert_eq!(parse_start_at("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_start_at("2026-11-27T09:00:00Z"), Ok(1_795_770_000_000));
        assert_eq!(parse_start_at("2026-11-27T10:00:00.25+01:00"), Ok(1_795_770_000_250));
        assert_eq!(parse_start_at("2000-02-29T23:59:59.999-00:30"), Ok(951_870_599_999));
        for bad in [
            "",
            "soon",
            "2026-11-27",
            "2026-13-01T00:00:00Z",
            "2026-11-27T09:00:00",
            "-5",
            "2026-11-27T09:00:00+99:00",
            "2026-11-27T09:00:00+24:00",
            "2026-11-27T09:00:00-05:60",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_start_at("2026-11-27T09:00:00+23:59"), Ok(1_795_770_000_000 - 1439 * 60_000));
    }

    #[test]
    fn start_at_lies_within_a_day_past_and_the_allowed_wait_ahead() {
        let now = 1_795_770_000_000.0;
        assert_eq!(within_window(1_795_770_000_000, now, 86_400), Ok(1_795_770_000_000));
        // A late shard (within a day) is a late shard, not a typo.
        assert!(within_window(1_795_770_000_000 - 3_600_000, now, 86_400).is_ok());
        for (t, want) in [
            (0, "1970-01-01T00:00:00.000Z is more than a day in the past"),
            (1_795_770_000, "1970-01-21T18:49:30.000Z is more than a day in the past"),
            (1_795_770_000_000 + 366 * 86_400_000, "2027-11-28T09:00:00.000Z is 8784.0 hours ahead"),
        ] {
            let e = within_window(t, now, 86_400).unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
        assert!(within_window(1_795_770_000_000 + 2 * 86_400_000, now, 3 * 86_400).is_ok());
        assert_eq!(rfc3339(1_795_770_000_250), "2026-11-27T09:00:00.250Z");
        assert_eq!(rfc3339(951_870_599_999), "2000-03-01T00:29:59.999Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
