//! The queries' substitution parameters, as TPC-H's qgen draws them (spec
//! clause 2.4.N.3 for query N), their validation values (clause 2.4.N.4), and
//! the order in which each query stream runs the 22 queries (Appendix A).
//!
//! This is our own generator written from the specification's definitions, not
//! a port of qgen: it draws from its own seeded SplitMix64, so the values are
//! valid for a run but not the ones qgen would print for the same seed. Every
//! draw is uniform over what the clause allows:
//! - integers over their closed range (`[60, 120]` days for Q1, ...);
//! - a word from its list (the spec's clause 4.2.2.13 and 4.2.3 lists, below);
//! - "a randomly selected day" over the whole days of the range (Q3);
//! - "the first day of a randomly selected month/year" over those months/years;
//! - sets that must not repeat (Q7's two nations, Q12's ship modes, Q16's sizes,
//!   Q22's country codes) without replacement, in draw order.

use std::fmt;

/// One substitution value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A whole number, written in decimal (days, sizes, quantities).
    Int(i64),
    /// An exact decimal as written, e.g. `"0.06"`: never rounded through binary floating point.
    Decimal(String),
    /// A word or phrase, without quotes: the templates quote it where SQL needs quotes.
    Text(String),
    /// A calendar date (year, month, day), written YYYY-MM-DD.
    Date(u16, u8, u8),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(n) => write!(f, "{n}"),
            Value::Decimal(s) | Value::Text(s) => f.write_str(s),
            Value::Date(y, m, d) => write!(f, "{y:04}-{m:02}-{d:02}"),
        }
    }
}

/// A query's parameters, in the order its template numbers them (:1, :2, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParams {
    /// The query's number, 1..=22.
    pub query: u8,
    /// The values; `values[0]` replaces `:1`.
    pub values: Vec<Value>,
}

/// R_NAME by region key (clause 4.2.3).
pub const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

/// (N_NAME, N_REGIONKEY) by nation key (clause 4.2.3).
pub const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

/// Types, syllable 1 (clause 4.2.2.13).
pub const TYPE_SYLLABLE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
/// Types, syllable 2.
pub const TYPE_SYLLABLE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
/// Types, syllable 3.
pub const TYPE_SYLLABLE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
/// Containers, syllable 1.
pub const CONTAINER_SYLLABLE_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
/// Containers, syllable 2.
pub const CONTAINER_SYLLABLE_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
/// Market segments.
pub const SEGMENTS: [&str; 5] = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"];
/// Ship modes.
pub const SHIP_MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
/// The words P_NAME is made of (clause 4.2.3), which Q9 and Q20 look for.
pub const COLORS: [&str; 92] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];
/// Q13's WORD1 (clause 2.4.13.3).
pub const Q13_WORD_1: [&str; 4] = ["special", "pending", "unusual", "express"];
/// Q13's WORD2.
pub const Q13_WORD_2: [&str; 4] = ["packages", "requests", "accounts", "deposits"];

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and every seed gives a
/// full-period, well-mixed sequence, which is all a few dozen draws need.
struct Rng {
    state: u64,
}

/// SplitMix64's output function: a bijective mix of all 64 bits.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator for one (seed, stream, query): each component is mixed
    /// in turn, so neighbouring streams or queries get unrelated sequences.
    fn new(seed: u64, stream: u32, query: u8) -> Rng {
        const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = mix64(seed.wrapping_add(GAMMA));
        h = mix64(h ^ u64::from(stream).wrapping_add(GAMMA.wrapping_mul(2)));
        h = mix64(h ^ u64::from(query).wrapping_add(GAMMA.wrapping_mul(3)));
        Rng { state: h }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// Uniform over `[lo, hi]`, without modulo bias (rejection of the top
    /// partial block of the 64-bit range).
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "empty range [{lo}, {hi}]");
        let span = (hi - lo) as u64 + 1;
        let limit = u64::MAX - u64::MAX % span;
        loop {
            let x = self.next_u64();
            if x < limit {
                return lo + (x % span) as i64;
            }
        }
    }

    /// A uniform index into a list of `len` items.
    fn index(&mut self, len: usize) -> usize {
        self.range(0, len as i64 - 1) as usize
    }

    /// A uniform word of `list`.
    fn pick(&mut self, list: &[&str]) -> String {
        list[self.index(list.len())].to_string()
    }

    /// `count` distinct values of `[lo, hi]` in draw order (a partial
    /// Fisher-Yates shuffle: each is uniform over those not yet drawn).
    fn distinct(&mut self, lo: i64, hi: i64, count: usize) -> Vec<i64> {
        let mut pool: Vec<i64> = (lo..=hi).collect();
        assert!(count <= pool.len(), "{count} distinct values from [{lo}, {hi}]");
        for i in 0..count {
            let j = i + self.index(pool.len() - i);
            pool.swap(i, j);
        }
        pool.truncate(count);
        pool
    }
}

/// The first day of the month `months` months after January `year`.
fn month_start(year: u16, months: i64) -> Value {
    Value::Date(year + (months / 12) as u16, (months % 12) as u8 + 1, 1)
}

/// A text value.
fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// `Brand#MN` with M and N each uniform over 1..=5 (Q16, Q17, Q19).
fn brand(rng: &mut Rng) -> Value {
    Value::Text(format!("Brand#{}{}", rng.range(1, 5), rng.range(1, 5)))
}

/// Q11's FRACTION, 0.0001 / SF, as exact-looking decimal text with ten
/// significant digits (0.0001 at SF 1, 0.01 at SF 0.01, 0.000001 at SF 100).
pub fn q11_fraction(sf: f64) -> Value {
    assert!(sf > 0.0 && sf.is_finite(), "scale factor {sf} is not positive");
    let fraction = 0.0001 / sf;
    let decimals = (9 - fraction.log10().floor() as i64).max(1) as usize;
    let mut s = format!("{fraction:.decimals$}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    Value::Decimal(s)
}

/// Parameters drawn from a seeded generator, as qgen does, for query 1..=22 at scale factor `sf`;
/// the same (seed, stream, query, sf) always gives the same values; different streams differ.
/// The order of the values is qgen's (e.g. Q19: BRAND1..3 then QUANTITY1..3), so that a user's
/// variant written against qgen's templates keeps its numbering. Panics if `query` is not 1..=22.
pub fn generate(query: u8, sf: f64, seed: u64, stream: u32) -> QueryParams {
    let mut rng = Rng::new(seed, stream, query);
    let rng = &mut rng;
    let values = match query {
        // DELTA in [60, 120] days.
        1 => vec![Value::Int(rng.range(60, 120))],
        // SIZE in [1, 50]; TYPE a third syllable; REGION.
        2 => {
            vec![Value::Int(rng.range(1, 50)), Value::Text(rng.pick(&TYPE_SYLLABLE_3)), Value::Text(rng.pick(&REGIONS))]
        }
        // SEGMENT; DATE a day of March 1995.
        3 => vec![Value::Text(rng.pick(&SEGMENTS)), Value::Date(1995, 3, rng.range(1, 31) as u8)],
        // DATE the first of a month from January 1993 to October 1997 (58 months).
        4 | 15 => vec![month_start(1993, rng.range(0, 57))],
        // REGION; DATE January 1st of 1993..=1997.
        5 => vec![Value::Text(rng.pick(&REGIONS)), Value::Date(rng.range(1993, 1997) as u16, 1, 1)],
        // DATE January 1st of 1993..=1997; DISCOUNT 0.02..=0.09 by cents; QUANTITY 24 or 25.
        6 => vec![
            Value::Date(rng.range(1993, 1997) as u16, 1, 1),
            Value::Decimal(format!("0.0{}", rng.range(2, 9))),
            Value::Int(rng.range(24, 25)),
        ],
        // NATION1 and NATION2, different.
        7 => rng.distinct(0, 24, 2).into_iter().map(|n| text(NATIONS[n as usize].0)).collect(),
        // NATION; REGION is that nation's region; TYPE of three syllables.
        8 => {
            let (nation, region) = NATIONS[rng.index(NATIONS.len())];
            let part_type =
                format!("{} {} {}", rng.pick(&TYPE_SYLLABLE_1), rng.pick(&TYPE_SYLLABLE_2), rng.pick(&TYPE_SYLLABLE_3));
            vec![text(nation), text(REGIONS[region]), Value::Text(part_type)]
        }
        // COLOR.
        9 => vec![Value::Text(rng.pick(&COLORS))],
        // DATE the first of a month from February 1993 to January 1995 (24 months).
        10 => vec![month_start(1993, rng.range(1, 24))],
        // NATION; FRACTION = 0.0001 / SF.
        11 => vec![text(NATIONS[rng.index(NATIONS.len())].0), q11_fraction(sf)],
        // SHIPMODE1 and SHIPMODE2, different; DATE January 1st of 1993..=1997.
        12 => {
            let modes = rng.distinct(0, SHIP_MODES.len() as i64 - 1, 2);
            vec![
                text(SHIP_MODES[modes[0] as usize]),
                text(SHIP_MODES[modes[1] as usize]),
                Value::Date(rng.range(1993, 1997) as u16, 1, 1),
            ]
        }
        // WORD1; WORD2.
        13 => vec![Value::Text(rng.pick(&Q13_WORD_1)), Value::Text(rng.pick(&Q13_WORD_2))],
        // DATE the first of a month of a year in 1993..=1997.
        14 => vec![Value::Date(rng.range(1993, 1997) as u16, rng.range(1, 12) as u8, 1)],
        // BRAND; TYPE the first two syllables; SIZE1..8 distinct in [1, 50].
        16 => {
            let mut values =
                vec![brand(rng), Value::Text(format!("{} {}", rng.pick(&TYPE_SYLLABLE_1), rng.pick(&TYPE_SYLLABLE_2)))];
            values.extend(rng.distinct(1, 50, 8).into_iter().map(Value::Int));
            values
        }
        // BRAND; CONTAINER of two syllables.
        17 => vec![
            brand(rng),
            Value::Text(format!("{} {}", rng.pick(&CONTAINER_SYLLABLE_1), rng.pick(&CONTAINER_SYLLABLE_2))),
        ],
        // QUANTITY in [312, 315].
        18 => vec![Value::Int(rng.range(312, 315))],
        // BRAND1..3 (independent, may repeat); QUANTITY1 in [1, 10], QUANTITY2 in [10, 20], QUANTITY3 in [20, 30].
        19 => vec![
            brand(rng),
            brand(rng),
            brand(rng),
            Value::Int(rng.range(1, 10)),
            Value::Int(rng.range(10, 20)),
            Value::Int(rng.range(20, 30)),
        ],
        // COLOR; DATE January 1st of 1993..=1997; NATION.
        20 => vec![
            Value::Text(rng.pick(&COLORS)),
            Value::Date(rng.range(1993, 1997) as u16, 1, 1),
            text(NATIONS[rng.index(NATIONS.len())].0),
        ],
        // NATION.
        21 => vec![text(NATIONS[rng.index(NATIONS.len())].0)],
        // I1..I7: distinct country codes, 10 + a nation key (clause 4.2.2.9).
        22 => rng.distinct(10, 34, 7).into_iter().map(|code| Value::Text(code.to_string())).collect(),
        _ => panic!("TPC-H has no query {query}"),
    };
    QueryParams { query, values }
}

/// The specification's validation values (clause 2.4.x.4), e.g. Q1 DELTA = 90, Q6 DATE 1994-01-01, DISCOUNT 0.06, QUANTITY 24.
/// Q11's FRACTION is 0.0001 / `sf` (the spec's 0.0001 is for SF 1). Q18's validation QUANTITY is 300, below the range
/// that `generate` draws from, as the spec has it. Panics if `query` is not 1..=22.
pub fn validation(query: u8, sf: f64) -> QueryParams {
    use Value::{Date, Decimal, Int};
    let values = match query {
        1 => vec![Int(90)],
        2 => vec![Int(15), text("BRASS"), text("EUROPE")],
        3 => vec![text("BUILDING"), Date(1995, 3, 15)],
        4 => vec![Date(1993, 7, 1)],
        5 => vec![text("ASIA"), Date(1994, 1, 1)],
        6 => vec![Date(1994, 1, 1), Decimal("0.06".into()), Int(24)],
        7 => vec![text("FRANCE"), text("GERMANY")],
        8 => vec![text("BRAZIL"), text("AMERICA"), text("ECONOMY ANODIZED STEEL")],
        9 => vec![text("green")],
        10 => vec![Date(1993, 10, 1)],
        11 => vec![text("GERMANY"), q11_fraction(sf)],
        12 => vec![text("MAIL"), text("SHIP"), Date(1994, 1, 1)],
        13 => vec![text("special"), text("requests")],
        14 => vec![Date(1995, 9, 1)],
        15 => vec![Date(1996, 1, 1)],
        16 => {
            let mut values = vec![text("Brand#45"), text("MEDIUM POLISHED")];
            values.extend([49, 14, 23, 45, 19, 3, 36, 9].into_iter().map(Int));
            values
        }
        17 => vec![text("Brand#23"), text("MED BOX")],
        18 => vec![Int(300)],
        19 => vec![text("Brand#12"), text("Brand#23"), text("Brand#34"), Int(1), Int(10), Int(20)],
        20 => vec![text("forest"), Date(1994, 1, 1), text("CANADA")],
        21 => vec![text("SAUDI ARABIA")],
        22 => ["13", "31", "23", "29", "30", "18", "17"].into_iter().map(text).collect(),
        _ => panic!("TPC-H has no query {query}"),
    };
    QueryParams { query, values }
}

/// The query orders of Appendix A: row 0 is the power test's stream, rows
/// 1..=40 the throughput test's streams.
const STREAM_ORDERS: [[u8; 22]; 41] = [
    [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12],
    [21, 3, 18, 5, 11, 7, 6, 20, 17, 12, 16, 15, 13, 10, 2, 8, 14, 19, 9, 22, 1, 4],
    [6, 17, 14, 16, 19, 10, 9, 2, 15, 8, 5, 22, 12, 7, 13, 18, 1, 4, 20, 3, 11, 21],
    [8, 5, 4, 6, 17, 7, 1, 18, 22, 14, 9, 10, 15, 11, 20, 2, 21, 19, 13, 16, 12, 3],
    [5, 21, 14, 19, 15, 17, 12, 6, 4, 9, 8, 16, 11, 2, 10, 18, 1, 13, 7, 22, 3, 20],
    [21, 15, 4, 6, 7, 16, 19, 18, 14, 22, 11, 13, 3, 1, 2, 5, 8, 20, 12, 17, 10, 9],
    [10, 3, 15, 13, 6, 8, 9, 7, 4, 11, 22, 18, 12, 1, 5, 16, 2, 14, 19, 20, 17, 21],
    [18, 8, 20, 21, 2, 4, 22, 17, 1, 11, 9, 19, 3, 13, 5, 7, 10, 16, 6, 14, 15, 12],
    [19, 1, 15, 17, 5, 8, 9, 12, 14, 7, 4, 3, 20, 16, 6, 22, 10, 13, 2, 21, 18, 11],
    [8, 13, 2, 20, 17, 3, 6, 21, 18, 11, 19, 10, 15, 4, 22, 1, 7, 12, 9, 14, 5, 16],
    [6, 15, 18, 17, 12, 1, 7, 2, 22, 13, 21, 10, 14, 9, 3, 16, 20, 19, 11, 4, 8, 5],
    [15, 14, 18, 17, 10, 20, 16, 11, 1, 8, 4, 22, 5, 12, 3, 9, 21, 2, 13, 6, 19, 7],
    [1, 7, 16, 17, 18, 22, 12, 6, 8, 9, 11, 4, 2, 5, 20, 21, 13, 10, 19, 3, 14, 15],
    [21, 17, 7, 3, 1, 10, 12, 22, 9, 16, 6, 11, 2, 4, 5, 14, 8, 20, 13, 18, 15, 19],
    [2, 9, 5, 4, 18, 1, 20, 15, 16, 17, 7, 21, 13, 14, 19, 8, 22, 11, 10, 3, 12, 6],
    [16, 9, 17, 8, 14, 11, 10, 12, 6, 21, 7, 3, 15, 5, 22, 20, 1, 13, 19, 2, 4, 18],
    [1, 3, 6, 5, 2, 16, 14, 22, 17, 20, 4, 9, 10, 11, 15, 8, 12, 19, 18, 13, 7, 21],
    [3, 16, 5, 11, 21, 9, 2, 15, 10, 18, 17, 7, 8, 19, 14, 13, 1, 4, 22, 20, 6, 12],
    [14, 4, 13, 5, 21, 11, 8, 6, 3, 17, 2, 20, 1, 19, 10, 9, 12, 18, 15, 7, 22, 16],
    [4, 12, 22, 14, 5, 15, 16, 2, 8, 10, 17, 9, 21, 7, 3, 6, 13, 18, 11, 20, 19, 1],
    [16, 15, 14, 13, 4, 22, 18, 19, 7, 1, 12, 17, 5, 10, 20, 3, 9, 21, 11, 2, 6, 8],
    [20, 14, 21, 12, 15, 17, 4, 19, 13, 10, 11, 1, 16, 5, 18, 7, 8, 22, 9, 6, 3, 2],
    [16, 14, 13, 2, 21, 10, 11, 4, 1, 22, 18, 12, 19, 5, 7, 8, 6, 3, 15, 20, 9, 17],
    [18, 15, 9, 14, 12, 2, 8, 11, 22, 21, 16, 1, 6, 17, 5, 10, 19, 4, 20, 13, 3, 7],
    [7, 3, 10, 14, 13, 21, 18, 6, 20, 4, 9, 8, 22, 15, 2, 1, 5, 12, 19, 17, 11, 16],
    [18, 1, 13, 7, 16, 10, 14, 2, 19, 5, 21, 11, 22, 15, 8, 17, 20, 3, 4, 12, 6, 9],
    [13, 2, 22, 5, 11, 21, 20, 14, 7, 10, 4, 9, 19, 18, 6, 3, 1, 8, 15, 12, 17, 16],
    [14, 17, 21, 8, 2, 9, 6, 4, 5, 13, 22, 7, 15, 3, 1, 18, 16, 11, 10, 12, 20, 19],
    [10, 22, 1, 12, 13, 18, 21, 20, 2, 14, 16, 7, 15, 3, 4, 17, 5, 19, 6, 8, 9, 11],
    [10, 8, 9, 18, 12, 6, 1, 5, 20, 11, 17, 22, 16, 3, 13, 2, 15, 21, 14, 19, 7, 4],
    [7, 17, 22, 5, 3, 10, 13, 18, 9, 1, 14, 15, 21, 19, 16, 12, 8, 6, 11, 20, 4, 2],
    [2, 9, 21, 3, 4, 7, 1, 11, 16, 5, 20, 19, 18, 8, 17, 13, 10, 12, 15, 6, 14, 22],
    [15, 12, 8, 4, 22, 13, 16, 17, 18, 3, 7, 5, 6, 1, 9, 11, 21, 10, 14, 20, 19, 2],
    [15, 16, 2, 11, 17, 7, 5, 14, 20, 4, 21, 3, 10, 9, 12, 8, 13, 6, 18, 19, 22, 1],
    [1, 13, 11, 3, 4, 21, 6, 14, 15, 22, 18, 9, 7, 5, 10, 20, 12, 16, 17, 8, 19, 2],
    [14, 17, 22, 20, 8, 16, 5, 10, 1, 13, 2, 21, 12, 9, 4, 18, 3, 7, 6, 19, 15, 11],
    [9, 17, 7, 4, 5, 13, 21, 18, 11, 3, 22, 1, 6, 16, 20, 14, 15, 10, 8, 2, 12, 19],
    [13, 14, 5, 22, 19, 11, 9, 6, 18, 15, 8, 10, 7, 4, 17, 16, 3, 1, 12, 2, 21, 20],
    [20, 5, 4, 14, 11, 1, 6, 16, 8, 22, 7, 3, 2, 12, 21, 19, 17, 13, 10, 15, 18, 9],
    [3, 7, 14, 15, 6, 5, 21, 20, 18, 10, 4, 16, 19, 1, 13, 9, 8, 17, 11, 12, 22, 2],
    [13, 15, 17, 1, 22, 11, 3, 4, 7, 20, 14, 21, 9, 8, 2, 18, 16, 6, 10, 12, 5, 19],
];

/// The order in which stream `s` runs the 22 queries (clause 5.3.5.4 / Appendix A; stream 0 is the power test's order:
/// 14 2 9 20 6 17 18 8 21 13 3 22 16 4 11 15 1 10 19 5 7 12). Appendix A defines streams 0..=40; stream 41 and up
/// wrap around to row `s % 41`, as common TPC-H drivers do.
pub fn stream_order(stream: u32) -> [u8; 22] {
    STREAM_ORDERS[(stream % STREAM_ORDERS.len() as u32) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every query's values, unwrapped by kind, for the property loops.
    fn int(v: &Value) -> i64 {
        match v {
            Value::Int(n) => *n,
            other => panic!("{other:?} is no Int"),
        }
    }

    fn txt(v: &Value) -> &str {
        match v {
            Value::Text(s) => s,
            other => panic!("{other:?} is no Text"),
        }
    }

    fn date(v: &Value) -> (u16, u8, u8) {
        match v {
            Value::Date(y, m, d) => (*y, *m, *d),
            other => panic!("{other:?} is no Date"),
        }
    }

    fn is_brand(s: &str) -> bool {
        let b = s.as_bytes();
        s.len() == 8 && s.starts_with("Brand#") && (b'1'..=b'5').contains(&b[6]) && (b'1'..=b'5').contains(&b[7])
    }

    fn nation(s: &str) -> bool {
        NATIONS.iter().any(|(n, _)| *n == s)
    }

    fn all_distinct<T: PartialEq>(items: &[T]) -> bool {
        items.iter().enumerate().all(|(i, a)| items[i + 1..].iter().all(|b| a != b))
    }

    /// The clause 2.4.N.3 constraints of one query's values.
    fn check(p: &QueryParams, sf: f64) {
        let v = &p.values;
        let jan1 = |x: &Value| {
            let (y, m, d) = date(x);
            assert!((1993..=1997).contains(&y) && m == 1 && d == 1, "{p:?}");
        };
        let month_in = |x: &Value, from: (u16, u8), to: (u16, u8)| {
            let (y, m, d) = date(x);
            assert!(d == 1 && (1..=12).contains(&m) && (y, m) >= from && (y, m) <= to, "{p:?}");
        };
        let arity = [0, 1, 3, 2, 1, 2, 3, 2, 3, 1, 1, 2, 3, 2, 1, 1, 10, 2, 1, 6, 3, 1, 7];
        assert_eq!(v.len(), arity[p.query as usize], "{p:?}");
        match p.query {
            1 => assert!((60..=120).contains(&int(&v[0]))),
            2 => {
                assert!((1..=50).contains(&int(&v[0])));
                assert!(TYPE_SYLLABLE_3.contains(&txt(&v[1])) && REGIONS.contains(&txt(&v[2])));
            }
            3 => {
                assert!(SEGMENTS.contains(&txt(&v[0])));
                let (y, m, d) = date(&v[1]);
                assert!(y == 1995 && m == 3 && (1..=31).contains(&d));
            }
            4 | 15 => month_in(&v[0], (1993, 1), (1997, 10)),
            5 => {
                assert!(REGIONS.contains(&txt(&v[0])));
                jan1(&v[1]);
            }
            6 => {
                jan1(&v[0]);
                let discount = match &v[1] {
                    Value::Decimal(s) => s.clone(),
                    other => panic!("{other:?}"),
                };
                assert!(
                    ["0.02", "0.03", "0.04", "0.05", "0.06", "0.07", "0.08", "0.09"].contains(&discount.as_str()),
                    "{discount}"
                );
                assert!((24..=25).contains(&int(&v[2])));
            }
            7 => assert!(nation(txt(&v[0])) && nation(txt(&v[1])) && v[0] != v[1]),
            8 => {
                let (_, region) = NATIONS.iter().find(|(n, _)| *n == txt(&v[0])).expect("a nation");
                assert_eq!(txt(&v[1]), REGIONS[*region], "Q8's region is its nation's");
                let syllables: Vec<&str> = txt(&v[2]).split(' ').collect();
                assert!(
                    syllables.len() == 3
                        && TYPE_SYLLABLE_1.contains(&syllables[0])
                        && TYPE_SYLLABLE_2.contains(&syllables[1])
                );
                assert!(TYPE_SYLLABLE_3.contains(&syllables[2]));
            }
            9 => assert!(COLORS.contains(&txt(&v[0]))),
            10 => month_in(&v[0], (1993, 2), (1995, 1)),
            11 => {
                assert!(nation(txt(&v[0])));
                assert_eq!(v[1], q11_fraction(sf));
            }
            12 => {
                assert!(SHIP_MODES.contains(&txt(&v[0])) && SHIP_MODES.contains(&txt(&v[1])) && v[0] != v[1]);
                jan1(&v[2]);
            }
            13 => assert!(Q13_WORD_1.contains(&txt(&v[0])) && Q13_WORD_2.contains(&txt(&v[1]))),
            14 => month_in(&v[0], (1993, 1), (1997, 12)),
            16 => {
                assert!(is_brand(txt(&v[0])));
                let syllables: Vec<&str> = txt(&v[1]).split(' ').collect();
                assert!(
                    syllables.len() == 2
                        && TYPE_SYLLABLE_1.contains(&syllables[0])
                        && TYPE_SYLLABLE_2.contains(&syllables[1])
                );
                let sizes: Vec<i64> = v[2..].iter().map(int).collect();
                assert!(sizes.iter().all(|s| (1..=50).contains(s)) && all_distinct(&sizes), "{sizes:?}");
            }
            17 => {
                assert!(is_brand(txt(&v[0])));
                let syllables: Vec<&str> = txt(&v[1]).split(' ').collect();
                assert!(syllables.len() == 2 && CONTAINER_SYLLABLE_1.contains(&syllables[0]));
                assert!(CONTAINER_SYLLABLE_2.contains(&syllables[1]));
            }
            18 => assert!((312..=315).contains(&int(&v[0]))),
            19 => {
                assert!(v[..3].iter().all(|b| is_brand(txt(b))));
                assert!(
                    (1..=10).contains(&int(&v[3]))
                        && (10..=20).contains(&int(&v[4]))
                        && (20..=30).contains(&int(&v[5]))
                );
            }
            20 => {
                assert!(COLORS.contains(&txt(&v[0])) && nation(txt(&v[2])));
                jan1(&v[1]);
            }
            21 => assert!(nation(txt(&v[0]))),
            22 => {
                let codes: Vec<i64> = v.iter().map(|c| txt(c).parse().unwrap()).collect();
                assert!(codes.iter().all(|c| (10..=34).contains(c)) && all_distinct(&codes), "{codes:?}");
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn generated_params_respect_the_spec_ranges() {
        for seed in 0..300u64 {
            for stream in [0, 1, 7, 40] {
                for q in 1..=22 {
                    let p = generate(q, 1.0, seed, stream);
                    assert_eq!(p.query, q);
                    check(&p, 1.0);
                }
            }
        }
    }

    #[test]
    fn validation_params_are_the_specs() {
        for q in 1..=22 {
            let p = validation(q, 1.0);
            assert_eq!(p.query, q);
            if q != 18 {
                check(&p, 1.0); // Q18's validation 300 lies below the generated range [312, 315].
            }
        }
        let text = |q: u8| validation(q, 1.0).values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ");
        assert_eq!(text(1), "90");
        assert_eq!(text(6), "1994-01-01 0.06 24");
        assert_eq!(text(8), "BRAZIL AMERICA ECONOMY ANODIZED STEEL");
        assert_eq!(text(11), "GERMANY 0.0001");
        assert_eq!(text(16), "Brand#45 MEDIUM POLISHED 49 14 23 45 19 3 36 9");
        assert_eq!(text(18), "300");
        assert_eq!(text(19), "Brand#12 Brand#23 Brand#34 1 10 20");
        assert_eq!(text(22), "13 31 23 29 30 18 17");
    }

    #[test]
    fn generation_is_deterministic_and_streams_differ() {
        for seed in [0u64, 1, 42, u64::MAX] {
            let streams: Vec<Vec<QueryParams>> =
                (0..=40).map(|s| (1..=22).map(|q| generate(q, 1.0, seed, s)).collect()).collect();
            for (s, params) in streams.iter().enumerate() {
                let again: Vec<QueryParams> = (1..=22).map(|q| generate(q, 1.0, seed, s as u32)).collect();
                assert_eq!(params, &again, "seed {seed} stream {s} is not reproducible");
            }
            assert!(all_distinct(&streams), "seed {seed}: two streams drew the same 22 parameter sets");
        }
        let seeds: Vec<Vec<QueryParams>> =
            (0..50).map(|seed| (1..=22).map(|q| generate(q, 1.0, seed, 0)).collect()).collect();
        assert!(all_distinct(&seeds), "two seeds drew the same parameters");
    }

    #[test]
    fn draws_cover_their_whole_ranges() {
        // Uniform draws over a few thousand runs reach every value of the small ranges.
        let mut q1 = std::collections::BTreeSet::new();
        let mut q18 = std::collections::BTreeSet::new();
        let mut q4 = std::collections::BTreeSet::new();
        let mut q22 = std::collections::BTreeSet::new();
        for seed in 0..3000 {
            q1.insert(int(&generate(1, 1.0, seed, 0).values[0]));
            q18.insert(int(&generate(18, 1.0, seed, 3).values[0]));
            q4.insert(date(&generate(4, 1.0, seed, 5).values[0]));
            q22.extend(generate(22, 1.0, seed, 9).values.iter().map(|c| txt(c).to_string()));
        }
        assert_eq!(q1.len(), 61);
        assert_eq!(q18.into_iter().collect::<Vec<_>>(), vec![312, 313, 314, 315]);
        assert_eq!((q4.len(), q4.first().copied(), q4.last().copied()), (58, Some((1993, 1, 1)), Some((1997, 10, 1))));
        assert_eq!(q22.len(), 25);
    }

    #[test]
    fn q11_fraction_scales_with_sf() {
        let fraction = |sf: f64| q11_fraction(sf).to_string();
        assert_eq!(fraction(1.0), "0.0001");
        assert_eq!(fraction(0.01), "0.01");
        assert_eq!(fraction(0.1), "0.001");
        assert_eq!(fraction(10.0), "0.00001");
        assert_eq!(fraction(100.0), "0.000001");
        assert_eq!(fraction(3000.0), "0.00000003333333333");
        assert_eq!(generate(11, 30.0, 5, 2).values[1], Value::Decimal("0.000003333333333".into()));
        assert_eq!(validation(11, 0.01).values[1], Value::Decimal("0.01".into()));
    }

    #[test]
    fn stream_orders_are_permutations() {
        for s in 0..=40 {
            let mut order = stream_order(s).to_vec();
            order.sort_unstable();
            assert_eq!(order, (1..=22).collect::<Vec<u8>>(), "stream {s}");
        }
        assert_eq!(stream_order(0), [14, 2, 9, 20, 6, 17, 18, 8, 21, 13, 3, 22, 16, 4, 11, 15, 1, 10, 19, 5, 7, 12]);
        assert_eq!(stream_order(1)[..4], [21, 3, 18, 5]);
        assert_eq!(stream_order(41), stream_order(0));
        let rows: Vec<[u8; 22]> = (0..=40).map(stream_order).collect();
        assert!(all_distinct(&rows));
    }

    #[test]
    fn values_print_as_sql_text() {
        assert_eq!(Value::Date(1995, 3, 5).to_string(), "1995-03-05");
        assert_eq!(Value::Int(-7).to_string(), "-7");
        assert_eq!(Value::Decimal("0.060".into()).to_string(), "0.060");
        assert_eq!(Value::Text("MIDDLE EAST".into()).to_string(), "MIDDLE EAST");
    }
}
