//! Latency percentiles of a cell with every event of its ok repeats pooled:
//! each run stores its whole HDR histogram, so a cell's histograms are merged
//! and any percentile is read from the merge (a mean of per-run p99s would
//! be no percentile of anything).

use super::model::Dataset;
use super::tables::PooledLatency;
use crate::store::Store;
use hdrhistogram::Histogram;
use std::collections::HashMap;

/// Decodes a stored histogram (base64 of HdrHistogram's V2 deflate encoding).
pub fn decode(encoded: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine;
    let bytes =
        base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|e| format!("not base64: {e}"))?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("not an HDR histogram: {e}"))
}

/// Percentile `p` (0..100] of a histogram of µs values, in ms, never above
/// `max_ms` (the exact maximum measured: a bucket's upper edge may be above it).
pub fn percentile_ms(h: &Histogram<u64>, p: f64, max_ms: Option<f64>) -> Option<f64> {
    if h.is_empty() {
        return None;
    }
    // As in collector::LatencyAcc: p / 100 is inexact; nudge it down so that the
    // nearest rank does not move up by one.
    let q = (p / 100.0 - 1e-12).clamp(0.0, 1.0);
    let ms = h.value_at_quantile(q) as f64 / 1000.0;
    Some(max_ms.map_or(ms, |m| ms.min(m)))
}

/// One pooled cell: (configuration, workload, threads).
type CellKey = (usize, usize, u32);

/// Every cell's pooled percentiles; warnings name histograms that could not be read.
pub fn pooled(store: &Store, data: &Dataset, percentiles: &[f64]) -> anyhow::Result<(PooledLatency, Vec<String>)> {
    let by_id: HashMap<i64, usize> =
        data.runs.iter().enumerate().filter(|(_, r)| r.ok()).map(|(i, r)| (r.figures.id, i)).collect();
    // Per cell: the merged histogram and the largest exact maximum of its runs.
    let mut merged: HashMap<CellKey, (Histogram<u64>, Option<f64>)> = HashMap::new();
    let mut warnings = Vec::new();
    for (id, encoded) in store.run_histograms(data.experiment.id)? {
        let Some(&i) = by_id.get(&id) else { continue };
        let run = &data.runs[i];
        let h = match decode(&encoded) {
            Ok(h) => h,
            Err(e) => {
                warnings.push(format!("run {id}: latency histogram unreadable ({e}); left out of the latency tables"));
                continue;
            }
        };
        let key = (run.configuration, run.workload, run.figures.threads);
        let max = run.figures.latency_max_ms;
        match merged.get_mut(&key) {
            Some((acc, acc_max)) => {
                if let Err(e) = acc.add(&h) {
                    warnings.push(format!("run {id}: latency histogram could not be merged ({e})"));
                    continue;
                }
                *acc_max = match (*acc_max, max) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            None => {
                merged.insert(key, (h, max));
            }
        }
    }
    let out = merged
        .into_iter()
        .map(|(k, (h, max))| (k, percentiles.iter().map(|p| percentile_ms(&h, *p, max)).collect()))
        .collect();
    Ok((out, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_pools() {
        use base64::Engine;
        use hdrhistogram::serialization::Serializer;
        let mut a = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let mut b = a.clone();
        for v in 1..=100u64 {
            a.record(v * 1000).unwrap(); // 1..100 ms
            b.record(v * 1000 + 100_000).unwrap(); // 101..200 ms
        }
        let enc = |h: &Histogram<u64>| {
            let mut buf = Vec::new();
            hdrhistogram::serialization::V2DeflateSerializer::new().serialize(h, &mut buf).unwrap();
            base64::engine::general_purpose::STANDARD.encode(buf)
        };
        let mut pooled = decode(&enc(&a)).unwrap();
        pooled.add(decode(&enc(&b)).unwrap()).unwrap();
        // 200 events of 1..200 ms: the median is 100 ms, p95 190 ms (3 significant digits).
        assert!((percentile_ms(&pooled, 50.0, None).unwrap() - 100.0).abs() < 0.1);
        assert!((percentile_ms(&pooled, 95.0, None).unwrap() - 190.0).abs() < 0.2);
        assert_eq!(percentile_ms(&pooled, 100.0, Some(199.5)), Some(199.5));
        assert!(decode("not base64!").is_err());
        assert!(decode("SElTVA==").is_err());
    }
}
