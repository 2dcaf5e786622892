//! Option registry and values, with sysbench 1.0.20's option syntax.
//!
//! Every option (general, driver, script) is declared as an [`OptionSpec`]
//! with a type and a textual default. Values are kept as text, exactly as
//! given, and converted on access, so that conversion errors name the option
//! and the value (`Invalid value for the 'threads' option: '2.5'`).
//! Names are stored with underscores; `-` and `_` are interchangeable.

use std::collections::BTreeMap;

/// Type of an option, as sysbench's `ARG_*` constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptKind {
    /// on/off, true/false, 1/0, bare flag = on.
    Bool,
    /// Whole integer.
    Int,
    /// Integer with optional K/M/G/T suffix (powers of 1024).
    Size,
    /// Floating point number.
    Double,
    /// Free text.
    String,
    /// Comma-separated list; empty items dropped.
    List,
    /// A file name (only `--config-file`).
    File,
}

impl OptKind {
    /// Kind from sysbench's numeric `ARG_*` code.
    pub fn from_sysbench_code(code: i64) -> Option<OptKind> {
        Some(match code {
            1 => OptKind::Bool,
            2 => OptKind::Int,
            3 => OptKind::Size,
            4 => OptKind::Double,
            5 => OptKind::String,
            6 => OptKind::List,
            7 => OptKind::File,
            _ => return None,
        })
    }
}

/// Declaration of one option.
#[derive(Debug, Clone)]
pub struct OptionSpec {
    /// Name with underscores (`mysql_host`).
    pub name: String,
    /// Value type.
    pub kind: OptKind,
    /// Default as text (`""` = unset).
    pub default: String,
    /// One-line help text.
    pub description: String,
}

impl OptionSpec {
    /// Convenience constructor for static declarations.
    pub fn new(name: &str, kind: OptKind, default: &str, description: &str) -> OptionSpec {
        OptionSpec {
            name: name.replace('-', "_"),
            kind,
            default: default.to_string(),
            description: description.to_string(),
        }
    }
}

/// Parsed option values, keyed by underscore name. Values are text; typed
/// accessors convert and panic-free fall back to the option's default when a
/// value cannot be converted (validation happens once, up front, in
/// [`Options::validate`]).
#[derive(Debug, Clone, Default)]
pub struct Options {
    specs: BTreeMap<String, OptionSpec>,
    values: BTreeMap<String, String>,
}

impl Options {
    /// Registers declarations (later declarations of the same name replace earlier ones).
    pub fn declare(&mut self, specs: impl IntoIterator<Item = OptionSpec>) {
        for s in specs {
            self.specs.insert(s.name.clone(), s);
        }
    }

    /// The declaration of `name`, if any.
    pub fn spec(&self, name: &str) -> Option<&OptionSpec> {
        self.specs.get(&normalize(name))
    }

    /// All declarations, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &OptionSpec> {
        self.specs.values()
    }

    /// Sets the raw text of an option (as given on the command line).
    pub fn set(&mut self, name: &str, value: &str) {
        self.values.insert(normalize(name), value.to_string());
    }

    /// Raw text of an option: the given value, else the declared default, else "".
    pub fn raw(&self, name: &str) -> &str {
        let n = normalize(name);
        if let Some(v) = self.values.get(&n) {
            return v;
        }
        self.specs.get(&n).map(|s| s.default.as_str()).unwrap_or("")
    }

    /// Whether the option was given (command line or config file), as
    /// opposed to taking its declared default.
    pub fn given(&self, name: &str) -> bool {
        self.values.contains_key(&normalize(name))
    }

    /// String value.
    pub fn str(&self, name: &str) -> &str {
        self.raw(name)
    }

    /// Boolean value (on/true/1/bare = true).
    pub fn bool(&self, name: &str) -> bool {
        parse_bool(self.raw(name)).unwrap_or(false)
    }

    /// Integer value (INT, or SIZE in bytes). Empty = 0.
    pub fn int(&self, name: &str) -> i64 {
        let raw = self.raw(name);
        match self.spec(name).map(|s| s.kind) {
            Some(OptKind::Size) => parse_size(raw).unwrap_or(0) as i64,
            _ => parse_int(raw).unwrap_or(0),
        }
    }

    /// Floating point value. Empty = 0.
    pub fn double(&self, name: &str) -> f64 {
        parse_double(self.raw(name)).unwrap_or(0.0)
    }

    /// List value: split on `,`, empty items dropped.
    pub fn list(&self, name: &str) -> Vec<String> {
        split_list(self.raw(name))
    }
}

/// `--table-size` and `--table_size` are the same option.
pub fn normalize(name: &str) -> String {
    name.trim().replace('-', "_")
}

/// Parses sysbench booleans: on/true/1/"" (bare flag) and off/false/0.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "" => Some(true),
        "off" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// Parses a whole integer; empty text is 0.
pub fn parse_int(v: &str) -> Option<i64> {
    if v.is_empty() {
        return Some(0);
    }
    v.trim().parse::<i64>().ok()
}

/// Parses a floating point number; empty text is 0.
pub fn parse_double(v: &str) -> Option<f64> {
    if v.is_empty() {
        return Some(0.0);
    }
    v.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Parses a size: digits with an optional K/M/G/T suffix (×1024ⁿ).
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    if v.is_empty() {
        return Some(0);
    }
    let (digits, mult) = match v.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&v[..v.len() - 1], 1u64 << 10),
        Some('M') => (&v[..v.len() - 1], 1 << 20),
        Some('G') => (&v[..v.len() - 1], 1 << 30),
        Some('T') => (&v[..v.len() - 1], 1 << 40),
        _ => (v, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// Splits a LIST value on commas, dropping empty items.
pub fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}
