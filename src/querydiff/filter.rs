//! The `--filter EXPR` language of `dbbench querydiff`: which compared records
//! (one query at one temperature, run on two servers) to show. Variables are
//! named like perfrun's (`Handler_read_key1`, `Sort_rows_delta`,
//! `Execution_time_ratio`, `Temperature`, `Query`, ...) and resolved by the
//! caller through a closure.
//!
//! The text is tokenized, parsed by a Pratt parser into a small tree and
//! evaluated by our own code: a filter can never run anything, only compute a
//! value. Logic is three-valued like SQL's NULL (`Value::Undefined`), so a
//! variable a record lacks, a division by zero or a type mismatch never makes a
//! record match by accident.
//!
//! Syntax, loosest first: `or`/`||`; `and`/`&&`; `not`/`!`; comparisons `= == != <> < <= > >=`
//! and `like` (`%`, `_`, `\` escape; case-sensitive); `+ -`; `* / %`; unary `- +`; parentheses.
//! Values: numbers (`2`, `.5`, `1.5E-2`), 'text' or "text", `true`, `false`, variables.
//! Keywords and the shorthands `warm`, `cold` (`Temperature = 'warm'`), `t1`, `t2`
//! (`Execution_time1`, `Execution_time2`) are case-insensitive; variable names are not.

use std::collections::BTreeSet;
use std::fmt;

/// Deepest nesting (parentheses, prefix operators, operator chains) accepted:
/// parsing and evaluation recurse, so unbounded input must not overflow the stack.
const MAX_DEPTH: usize = 256;

/// A value an expression evaluates to.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number: counters, seconds, ratios and numeric literals.
    Number(f64),
    /// A string: `Temperature`, `Query`, `Name`, `Result` and quoted literals.
    Text(String),
    /// The result of a comparison or of `and`/`or`/`not`.
    Bool(bool),
    /// Unknown, like SQL NULL: a variable the record does not have, or an
    /// operation without a meaningful result (division by zero, type mismatch).
    Undefined,
}

/// A parsed filter expression.
#[derive(Debug, Clone)]
pub struct Filter {
    source: String,
    expr: Expr,
}

/// Why a filter did not parse: the 1-based column (in characters) where the problem is, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterError {
    /// 1-based column, counted in characters (not bytes), of the offending token.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for FilterError {}

fn err(column: usize, message: impl Into<String>) -> FilterError {
    FilterError { column, message: message.into() }
}

impl Filter {
    /// Parses a filter; the error gives the column of the offending token and what was expected there.
    pub fn parse(source: &str) -> Result<Filter, FilterError> {
        let tokens = tokenize(source)?;
        if tokens[0].tok == Tok::End {
            return Err(err(1, "empty filter expression"));
        }
        let mut parser = Parser { tokens, pos: 0 };
        let expr = parser.expr(0, 0)?;
        let rest = parser.peek();
        match rest.tok {
            Tok::End => Ok(Filter { source: source.to_string(), expr }),
            Tok::RParen => Err(err(rest.column, "unexpected ')' with no matching '('")),
            _ => Err(err(rest.column, format!("unexpected {} after a complete expression", describe(rest)))),
        }
    }

    /// The source text as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether a record matches: the expression is evaluated with `lookup` resolving each
    /// variable name (returning `Value::Undefined` for a name the record does not have); the
    /// record matches only when the result is `Bool(true)` or a non-zero `Number`. `Text` and
    /// `Undefined` do not match.
    pub fn matches(&self, lookup: &dyn Fn(&str) -> Value) -> bool {
        truth(&self.evaluate(lookup)) == Some(true)
    }

    /// Evaluates to a Value (for tests and diagnostics).
    pub fn evaluate(&self, lookup: &dyn Fn(&str) -> Value) -> Value {
        eval(&self.expr, lookup)
    }

    /// The variable names the expression reads, sorted, deduplicated (callers warn about names
    /// no record has, which are likely typos). Aliases appear under the name they stand for:
    /// `t1` as `Execution_time1`, `warm`/`cold` as `Temperature`.
    pub fn variables(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut BTreeSet<String>) {
            match e {
                Expr::Lit(_) => {}
                Expr::Var(name) => {
                    out.insert(name.clone());
                }
                Expr::Unary(_, x) | Expr::Not(x) => walk(x, out),
                Expr::And(items) | Expr::Or(items) => items.iter().for_each(|x| walk(x, out)),
                Expr::Binary(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
            }
        }
        let mut out = BTreeSet::new();
        walk(&self.expr, &mut out);
        out.into_iter().collect()
    }
}

// ---------------------------------------------------------------- tokenizer

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Like,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    True,
    False,
    And,
    Or,
    Not,
    Op(Op),
    LParen,
    RParen,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// 1-based character column of the token's first character.
    column: usize,
    /// The token as written, for error messages.
    text: String,
}

/// How a token is named in an error message.
fn describe(t: &Token) -> String {
    match t.tok {
        Tok::End => "end of expression".into(),
        Tok::Str(_) => t.text.clone(), // already quoted as written
        _ => format!("'{}'", t.text),
    }
}

/// Splits the source into tokens; always ends with `Tok::End`, placed just after the last
/// non-blank character so "found end of expression" points where something is missing.
fn tokenize(src: &str) -> Result<Vec<Token>, FilterError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let (value, end) = number(&chars, i)?;
            i = end;
            Tok::Num(value)
        } else if c == '\'' || c == '"' {
            let mut text = String::new();
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => return Err(err(start + 1, "unterminated string (opened here)")),
                    Some(&q) if q == c => break,
                    // Only quotes and backslash are escaped; other backslashes stay, so
                    // `'50\%'` reaches LIKE as `50\%` (a literal percent sign).
                    Some('\\') if matches!(chars.get(j + 1), Some('\'' | '"' | '\\')) => {
                        text.push(chars[j + 1]);
                        j += 2;
                    }
                    Some(&other) => {
                        text.push(other);
                        j += 1;
                    }
                }
            }
            i = j + 1;
            Tok::Str(text)
        } else if c.is_ascii_alphabetic() || c == '_' {
            while chars.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match word.to_ascii_lowercase().as_str() {
                "and" => Tok::And,
                "or" => Tok::Or,
                "not" => Tok::Not,
                "like" => Tok::Op(Op::Like),
                "true" => Tok::True,
                "false" => Tok::False,
                _ => Tok::Ident(word),
            }
        } else {
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let (tok, len) = match (c, next) {
                ('=', '=') => (Tok::Op(Op::Eq), 2),
                ('!', '=') | ('<', '>') => (Tok::Op(Op::Ne), 2),
                ('<', '=') => (Tok::Op(Op::Le), 2),
                ('>', '=') => (Tok::Op(Op::Ge), 2),
                ('&', '&') => (Tok::And, 2),
                ('|', '|') => (Tok::Or, 2),
                ('=', _) => (Tok::Op(Op::Eq), 1),
                ('<', _) => (Tok::Op(Op::Lt), 1),
                ('>', _) => (Tok::Op(Op::Gt), 1),
                ('+', _) => (Tok::Op(Op::Add), 1),
                ('-', _) => (Tok::Op(Op::Sub), 1),
                ('*', _) => (Tok::Op(Op::Mul), 1),
                ('/', _) => (Tok::Op(Op::Div), 1),
                ('%', _) => (Tok::Op(Op::Rem), 1),
                ('!', _) => (Tok::Not, 1),
                ('(', _) => (Tok::LParen, 1),
                (')', _) => (Tok::RParen, 1),
                ('&' | '|', _) => {
                    let word = if c == '&' { "and" } else { "or" };
                    return Err(err(start + 1, format!("unexpected character '{c}' (use '{c}{c}' or '{word}')")));
                }
                // `{:?}` quotes the character and escapes control characters.
                _ => return Err(err(start + 1, format!("unexpected character {c:?}"))),
            };
            i += len;
            tok
        };
        out.push(Token { tok, column: start + 1, text: chars[start..i].iter().collect() });
    }
    let end = src.trim_end().chars().count() + 1;
    out.push(Token { tok: Tok::End, column: end, text: String::new() });
    Ok(out)
}

/// Scans `2`, `0.1`, `.5`, `1e3`, `1.5E-2` starting at `start`; returns the value and the end index.
fn number(chars: &[char], start: usize) -> Result<(f64, usize), FilterError> {
    let digits = |mut i: usize| {
        while chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut i = digits(start);
    if chars.get(i) == Some(&'.') {
        i = digits(i + 1);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        let end = digits(i + 1 + sign);
        if end > i + 1 + sign {
            i = end; // an exponent without digits is left for the check below to reject
        }
    }
    // A number glued to letters, digits or dots (`2x`, `1e`, `1.2.3`) is a typo, not two tokens.
    let mut end = i;
    while chars.get(end).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.') {
        end += 1;
    }
    let text: String = chars[start..end].iter().collect();
    if end > i {
        return Err(err(start + 1, format!("malformed number '{text}'")));
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok((v, end)),
        _ => Err(err(start + 1, format!("number '{text}' is out of range"))),
    }
}

// ---------------------------------------------------------------- parser

#[derive(Debug, Clone)]
enum Expr {
    Lit(Value),
    Var(String),
    /// Unary `-` or `+`.
    Unary(Op, Box<Expr>),
    Not(Box<Expr>),
    /// `and`/`or` chains are flattened so long condition lists do not deepen the tree.
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// Arithmetic, comparison or `like`.
    Binary(Op, Box<Expr>, Box<Expr>),
}

// Binding powers, lowest first. An operator is taken while its power exceeds the caller's minimum.
const BP_OR: u8 = 1;
const BP_AND: u8 = 2;
const BP_NOT: u8 = 3;
const BP_CMP: u8 = 4;
const BP_ADD: u8 = 5;
const BP_MUL: u8 = 6;
const BP_UNARY: u8 = 7;

fn op_power(op: Op) -> u8 {
    match op {
        Op::Add | Op::Sub => BP_ADD,
        Op::Mul | Op::Div | Op::Rem => BP_MUL,
        _ => BP_CMP,
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    /// The current token; `pos` never passes the final `End`.
    fn peek(&self) -> &Token {
        &self.tokens[self.pos]
    }

    fn next(&mut self) -> Token {
        let t = self.tokens[self.pos].clone();
        if t.tok != Tok::End {
            self.pos += 1;
        }
        t
    }

    /// Parses an expression whose operators all bind tighter than `min_bp`; `depth` counts
    /// nesting so far (see MAX_DEPTH). Split in prefix and infix halves so that nesting by
    /// parentheses or prefix operators recurses through small frames only.
    fn expr(&mut self, min_bp: u8, depth: usize) -> Result<Expr, FilterError> {
        if depth > MAX_DEPTH {
            return Err(too_deep(self.peek()));
        }
        let lhs = self.prefix(min_bp, depth)?;
        self.infix(lhs, min_bp, depth)
    }

    /// A value, variable, parenthesized expression or prefix operator with its operand.
    fn prefix(&mut self, min_bp: u8, depth: usize) -> Result<Expr, FilterError> {
        let tok = self.next();
        Ok(match tok.tok {
            Tok::Num(n) => Expr::Lit(Value::Number(n)),
            Tok::Str(s) => Expr::Lit(Value::Text(s)),
            Tok::True => Expr::Lit(Value::Bool(true)),
            Tok::False => Expr::Lit(Value::Bool(false)),
            Tok::Ident(name) => variable(name),
            Tok::LParen => {
                let inner = self.expr(0, depth + 1)?;
                let close = self.next();
                if close.tok != Tok::RParen {
                    return Err(unclosed(&tok, &close));
                }
                inner
            }
            // `not` binds looser than comparisons, so as the operand of one (`a = not b`) its
            // reach would be surprising: demand parentheses instead of guessing.
            Tok::Not if min_bp > BP_NOT => return Err(not_operand(&tok)),
            Tok::Not => Expr::Not(Box::new(self.expr(BP_NOT, depth + 1)?)),
            Tok::Op(op @ (Op::Add | Op::Sub)) => Expr::Unary(op, Box::new(self.expr(BP_UNARY, depth + 1)?)),
            _ => return Err(expected_value(&tok)),
        })
    }

    /// Extends `lhs` with the operators that follow and bind tighter than `min_bp`.
    fn infix(&mut self, mut lhs: Expr, min_bp: u8, mut depth: usize) -> Result<Expr, FilterError> {
        let mut compared = false;
        loop {
            let t = self.peek();
            let (bp, op) = match t.tok {
                Tok::Or => (BP_OR, None),
                Tok::And => (BP_AND, None),
                Tok::Op(op) => (op_power(op), Some(op)),
                _ => break, // not an infix operator: the caller decides what it means
            };
            if bp <= min_bp {
                break;
            }
            let at = self.pos;
            self.pos += 1;
            lhs = match op {
                None => {
                    let is_and = bp == BP_AND;
                    let mut items = match lhs {
                        Expr::And(items) if is_and => items,
                        Expr::Or(items) if !is_and => items,
                        other => {
                            depth += 1;
                            vec![other]
                        }
                    };
                    items.push(self.expr(bp, depth)?);
                    if is_and {
                        Expr::And(items)
                    } else {
                        Expr::Or(items)
                    }
                }
                Some(op) => {
                    // `a < b < c` would compare a Bool with c: almost surely a mistake.
                    if bp == BP_CMP && std::mem::replace(&mut compared, true) {
                        return Err(chained(&self.tokens[at]));
                    }
                    depth += 1;
                    Expr::Binary(op, Box::new(lhs), Box::new(self.expr(bp, depth)?))
                }
            };
        }
        Ok(lhs)
    }
}

// Error builders live outside the recursive parser methods (and are never inlined into
// them) because formatting temporaries would otherwise sit in every frame of the recursion,
// several times over in debug builds, shrinking how deep a nesting fits on the stack.

#[cold]
#[inline(never)]
fn too_deep(at: &Token) -> FilterError {
    err(at.column, format!("expression nested too deeply (more than {MAX_DEPTH} levels)"))
}

#[cold]
#[inline(never)]
fn unclosed(open: &Token, found: &Token) -> FilterError {
    err(found.column, format!("expected ')' to close the '(' at column {}, found {}", open.column, describe(found)))
}

#[cold]
#[inline(never)]
fn not_operand(not: &Token) -> FilterError {
    err(not.column, format!("put '{0} ...' in parentheses when it is an operand, e.g. a = ({0} b)", not.text))
}

#[cold]
#[inline(never)]
fn expected_value(found: &Token) -> FilterError {
    err(found.column, format!("expected a value (number, 'text', variable or '(') but found {}", describe(found)))
}

#[cold]
#[inline(never)]
fn chained(op: &Token) -> FilterError {
    err(op.column, "comparisons do not chain; use 'and' (a < b and b < c)")
}

/// A variable reference, with perfrun's shorthands: `warm`/`cold` test the temperature,
/// `t1`/`t2` are the execution times (all case-insensitive).
fn variable(name: String) -> Expr {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "warm" | "cold" => {
            Expr::Binary(Op::Eq, Box::new(Expr::Var("Temperature".into())), Box::new(Expr::Lit(Value::Text(lower))))
        }
        "t1" => Expr::Var("Execution_time1".into()),
        "t2" => Expr::Var("Execution_time2".into()),
        _ => Expr::Var(name),
    }
}

// ---------------------------------------------------------------- evaluator

/// A value as a condition: numbers are true when non-zero; text and Undefined have no truth.
fn truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => Some(*n != 0.0),
        Value::Text(_) | Value::Undefined => None,
    }
}

fn eval(e: &Expr, lookup: &dyn Fn(&str) -> Value) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        // A NaN or infinite counter from the caller is as meaningless as one computed here.
        Expr::Var(name) => match lookup(name) {
            Value::Number(n) if !n.is_finite() => Value::Undefined,
            v => v,
        },
        Expr::Unary(op, x) => match eval(x, lookup) {
            Value::Number(n) => Value::Number(if *op == Op::Sub { -n } else { n }),
            _ => Value::Undefined,
        },
        Expr::Not(x) => truth(&eval(x, lookup)).map_or(Value::Undefined, |b| Value::Bool(!b)),
        Expr::And(items) => logic(items, false, lookup),
        Expr::Or(items) => logic(items, true, lookup),
        Expr::Binary(op, a, b) => binary(*op, eval(a, lookup), eval(b, lookup)),
    }
}

/// `and` (decisive = false) / `or` (decisive = true) over SQL three-valued logic: one decisive
/// operand settles the result even next to unknown ones; otherwise any unknown makes it unknown.
fn logic(items: &[Expr], decisive: bool, lookup: &dyn Fn(&str) -> Value) -> Value {
    let mut unknown = false;
    for item in items {
        match truth(&eval(item, lookup)) {
            Some(b) if b == decisive => return Value::Bool(decisive),
            Some(_) => {}
            None => unknown = true,
        }
    }
    if unknown {
        Value::Undefined
    } else {
        Value::Bool(!decisive)
    }
}

fn binary(op: Op, a: Value, b: Value) -> Value {
    use Value::{Bool, Number, Text, Undefined};
    let ordering = match (op, &a, &b) {
        (Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem, Number(x), Number(y)) => {
            let r = match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                Op::Div => x / y,
                _ => x % y,
            };
            // Division or remainder by zero and overflow give NaN/infinity: no meaningful value.
            return if r.is_finite() { Number(r) } else { Undefined };
        }
        (Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem, _, _) => return Undefined,
        (Op::Like, Text(s), Text(p)) => return Bool(like(s, p)),
        (Op::Like, _, _) => return Undefined,
        (_, Number(x), Number(y)) => x.partial_cmp(y),
        (_, Text(x), Text(y)) => Some(x.cmp(y)),
        (Op::Eq | Op::Ne, Bool(x), Bool(y)) => Some(x.cmp(y)),
        _ => None, // mismatched types, ordered booleans, Undefined
    };
    match ordering {
        None => Undefined,
        Some(o) => Bool(match op {
            Op::Eq => o.is_eq(),
            Op::Ne => o.is_ne(),
            Op::Lt => o.is_lt(),
            Op::Le => o.is_le(),
            Op::Gt => o.is_gt(),
            _ => o.is_ge(),
        }),
    }
}

#[derive(PartialEq)]
enum Pat {
    Many,
    One,
    Lit(char),
}

/// SQL LIKE, case-sensitive: `%` any run, `_` one character, `\` makes the next one literal
/// (as in MySQL). Iterative backtracking to the last `%`: no recursion, O(text × pattern) worst case.
fn like(text: &str, pattern: &str) -> bool {
    let mut pat = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        pat.push(match c {
            '%' => Pat::Many,
            '_' => Pat::One,
            '\\' => Pat::Lit(it.next().unwrap_or('\\')),
            c => Pat::Lit(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    let (mut t, mut p) = (0, 0);
    let mut retry: Option<(usize, usize)> = None; // (index of last '%', text index it resumes at)
    while t < text.len() {
        match pat.get(p) {
            Some(Pat::Many) => {
                retry = Some((p, t));
                p += 1;
            }
            Some(Pat::One) => (t, p) = (t + 1, p + 1),
            Some(Pat::Lit(c)) if *c == text[t] => (t, p) = (t + 1, p + 1),
            _ => match retry {
                Some((sp, st)) => {
                    retry = Some((sp, st + 1));
                    (t, p) = (st + 1, sp + 1);
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|x| *x == Pat::Many)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::{Bool, Number, Text, Undefined};

    /// A record: x=10, y=3, zero=0, Temperature='warm', Name='q7.sql', Execution_time1/2, nan.
    fn record(name: &str) -> Value {
        match name {
            "x" => Number(10.0),
            "y" => Number(3.0),
            "zero" => Number(0.0),
            "Temperature" => Text("warm".into()),
            "Name" => Text("q7.sql".into()),
            "Query" => Text("SELECT * FROM lineitem".into()),
            "Execution_time1" => Number(0.05),
            "Execution_time2" => Number(0.2),
            "Execution_time_ratio" => Number(4.0),
            "Handler_read_rnd_next_delta" => Number(5000.0),
            "Handler_read_key1" => Number(5.0),
            "Handler_read_key2" => Number(40.0),
            "Sort_rows1" => Number(2.0),
            "Created_tmp_tables_delta" => Number(0.0),
            "nan" => Number(f64::NAN),
            _ => Undefined,
        }
    }

    fn ev(src: &str) -> Value {
        Filter::parse(src).unwrap_or_else(|e| panic!("{src}: {e}")).evaluate(&record)
    }

    fn error(src: &str) -> String {
        Filter::parse(src).map(|_| "parsed".to_string()).unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn literals() {
        for (src, want) in
            [("2", 2.0), ("0.1", 0.1), (".5", 0.5), ("1.", 1.0), ("1e3", 1000.0), ("1.5E-2", 0.015), ("2e+1", 20.0)]
        {
            assert_eq!(ev(src), Number(want), "{src}");
        }
        assert_eq!(ev(r"'it\'s'"), Text("it's".into()));
        assert_eq!(ev(r#""say \"hi\"""#), Text("say \"hi\"".into()));
        assert_eq!(ev(r"'a\\b'"), Text(r"a\b".into()));
        assert_eq!(ev(r"'a\nb'"), Text(r"a\nb".into())); // other escapes stay as written
        assert_eq!(ev("'é'"), Text("é".into()));
        assert_eq!((ev("true"), ev("FALSE")), (Bool(true), Bool(false)));
    }

    #[test]
    fn precedence_and_associativity() {
        for src in [
            "1 + 2 * 3 = 7",
            "(1 + 2) * 3 = 9",
            "10 - 4 - 3 = 3",
            "8 / 4 / 2 = 1",
            "-2 * 3 = -6",
            "2 * -3 = -6",
            "7 % 3 = 1",
            "+x = 10",
            "- -x = 10",
            "not 1 = 2",
            "true or false and false",
            "not false and true",
            "x > 5 and y < 5 or zero",
            "!(x < 5)",
            "x - y * 2 > 3",
        ] {
            assert_eq!(ev(src), Bool(true), "{src}");
        }
        for src in ["(true or false) and false", "not true and false", "not (x > 5 and y < 5)", "x - y * 2 > 4"] {
            assert_eq!(ev(src), Bool(false), "{src}");
        }
    }

    #[test]
    fn comparisons() {
        let cases = [
            ("x = 10", true),
            ("x == 10", true),
            ("x != 10", false),
            ("x <> 3", true),
            ("y < x", true),
            ("x < y", false),
            ("x <= 10", true),
            ("x > 10", false),
            ("x >= 10", true),
            ("'abc' < 'abd'", true),
            ("'b' > 'a'", true),
            ("Temperature = 'warm'", true),
            ("Temperature = 'Warm'", false),
            ("true = true", true),
            ("true != false", true),
        ];
        for (src, want) in cases {
            assert_eq!(ev(src), Bool(want), "{src}");
        }
    }

    #[test]
    fn three_valued_logic() {
        // `missing` is not in the record; `nan` is a non-finite number from the caller.
        for (src, want) in [
            ("missing and false", Bool(false)),
            ("missing and true", Undefined),
            ("missing or true", Bool(true)),
            ("missing or false", Undefined),
            ("not missing", Undefined),
            ("false and missing", Bool(false)),
            ("missing = missing", Undefined),
            ("missing + 1", Undefined),
            ("-missing", Undefined),
            ("nan", Undefined),
            ("1 / 0", Undefined),
            ("1 % 0", Undefined),
            ("0 / 0", Undefined),
            ("1e308 * 10", Undefined),
            ("1 = '1'", Undefined),
            ("true < false", Undefined),
            ("true = 1", Undefined),
            ("'a' + 1", Undefined),
            ("'a' and true", Undefined),
            ("'a' or true", Bool(true)),
            ("2 and 1", Bool(true)),
            ("0 or 0", Bool(false)),
            ("not 0", Bool(true)),
            ("x / 4", Number(2.5)),
            ("not missing or x > 1", Bool(true)),
        ] {
            assert_eq!(ev(src), want, "{src}");
        }
    }

    #[test]
    fn matches_only_true_or_nonzero() {
        let m = |src: &str| Filter::parse(src).unwrap().matches(&record);
        assert!(m("true") && m("x") && m("-1") && m("x > 1"));
        assert!(
            !m("false") && !m("zero") && !m("'text'") && !m("missing") && !m("missing > 1") && !m("not (missing > 1)")
        );
    }

    #[test]
    fn documented_examples() {
        for src in [
            "Execution_time_ratio > 2 and Handler_read_rnd_next_delta > 1000",
            "(Execution_time1 > 0.1 or Execution_time2 > 0.1) and Temperature = 'warm'",
            "not (Created_tmp_tables_delta = 0) or Query like '%lineitem%'",
            "Handler_read_key2 - Handler_read_key1 >= 10 * (1 + Sort_rows1)",
            "Execution_time_ratio >= 1.5e0 && Temperature != \"cold\" || Name == 'q7.sql'",
        ] {
            assert!(Filter::parse(src).unwrap().matches(&record), "{src}");
        }
        assert!(!Filter::parse("Handler_read_key2 - Handler_read_key1 >= 10 * (2 + Sort_rows1)")
            .unwrap()
            .matches(&record));
    }

    #[test]
    fn aliases_and_keyword_case() {
        for src in [
            "warm",
            "WARM and not Cold",
            "t1 < T2",
            "t2 = 0.2",
            "x > 1 AND y < 5",
            "x < 1 Or y < 5",
            "NOT x < 1",
            "Query LIKE '%lineitem'",
            "TRUE",
            "x > 1 anD warm",
        ] {
            assert_eq!(ev(src), Bool(true), "{src}");
        }
        assert_eq!(ev("cold"), Bool(false));
        // Variable names are passed as written (case-sensitive): `X` is not `x`.
        assert_eq!(ev("X"), Undefined);
        let seen = std::cell::RefCell::new(Vec::new());
        Filter::parse("Handler_Read_key1 + t1 > 0 or wArm").unwrap().evaluate(&|n: &str| {
            seen.borrow_mut().push(n.to_string());
            Undefined
        });
        assert_eq!(seen.into_inner(), ["Handler_Read_key1", "Execution_time1", "Temperature"]);
    }

    #[test]
    fn like_patterns() {
        for (text, pat, want) in [
            ("abc", "a%", true),
            ("abc", "%c", true),
            ("abc", "%b%", true),
            ("abc", "a_c", true),
            ("ac", "a_c", false),
            ("abc", "abc", true),
            ("abc", "ABC", false),
            ("abc", "ab", false),
            ("", "", true),
            ("", "%", true),
            ("a", "", false),
            ("", "_", false),
            ("aaa", "%a%a%a%", true),
            ("aa", "%a%a%a%", false),
            ("mississippi", "%iss%ppi", true),
            ("mississippi", "m%ss%x", false),
            ("50%", r"50\%", true),
            ("500", r"50\%", false),
            ("a_b", r"a\_b", true),
            ("axb", r"a\_b", false),
            (r"a\", r"a\", true),
            ("é", "_", true),
        ] {
            assert_eq!(like(text, pat), want, "{text:?} like {pat:?}");
        }
        // Through the language: quotes keep `\%` for LIKE; non-text operands are Undefined.
        assert_eq!(ev(r"'50%' like '50\%'"), Bool(true));
        assert_eq!(ev("1 like '1'"), Undefined);
        assert_eq!(ev("missing like '%'"), Undefined);
    }

    #[test]
    fn error_messages_and_columns() {
        let value = "expected a value (number, 'text', variable or '(') but found";
        let cases = [
            ("", "column 1: empty filter expression".to_string()),
            ("   ", "column 1: empty filter expression".into()),
            ("$", "column 1: unexpected character '$'".into()),
            ("x > 1 and and", format!("column 11: {value} 'and'")),
            ("x =", format!("column 4: {value} end of expression")),
            ("x = )", format!("column 5: {value} ')'")),
            ("x > 'a' 'b'", "column 9: unexpected 'b' after a complete expression".into()),
            ("x = 'warm", "column 5: unterminated string (opened here)".into()),
            (r"x = 'a\'", "column 5: unterminated string (opened here)".into()),
            (
                "x and (y or zero  ",
                "column 17: expected ')' to close the '(' at column 7, found end of expression".into(),
            ),
            ("(x y)", "column 4: expected ')' to close the '(' at column 1, found 'y'".into()),
            ("x < y < 1", "column 7: comparisons do not chain; use 'and' (a < b and b < c)".into()),
            ("x = y like 'a'", "column 7: comparisons do not chain; use 'and' (a < b and b < c)".into()),
            ("not x + 1 = y = 2", "column 15: comparisons do not chain; use 'and' (a < b and b < c)".into()),
            ("x = 1 y", "column 7: unexpected 'y' after a complete expression".into()),
            ("x)", "column 2: unexpected ')' with no matching '('".into()),
            ("x & y", "column 3: unexpected character '&' (use '&&' or 'and')".into()),
            ("x | y", "column 3: unexpected character '|' (use '||' or 'or')".into()),
            ("2x > 1", "column 1: malformed number '2x'".into()),
            ("x > 1e", "column 5: malformed number '1e'".into()),
            ("1.2.3", "column 1: malformed number '1.2.3'".into()),
            ("1e999 > x", "column 1: number '1e999' is out of range".into()),
            ("x = not y", "column 5: put 'not ...' in parentheses when it is an operand, e.g. a = (not b)".into()),
            ("x + ! y", "column 5: put '! ...' in parentheses when it is an operand, e.g. a = (! b)".into()),
            ("é = 1", "column 1: unexpected character 'é'".into()),
            ("'é' = x ü", "column 9: unexpected character 'ü'".into()), // columns count characters, not bytes
            ("x\u{0}", "column 2: unexpected character '\\0'".into()),
        ];
        for (src, want) in cases {
            assert_eq!(error(src), want, "{src:?}");
        }
        let e = Filter::parse("x @").unwrap_err();
        assert_eq!(e, FilterError { column: 3, message: "unexpected character '@'".into() });
        let _: &dyn std::error::Error = &e;
    }

    #[test]
    fn nesting_limit_and_nasty_input() {
        let nested = |n: usize| format!("{}x{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(ev(&nested(MAX_DEPTH)), Number(10.0));
        assert_eq!(
            error(&nested(MAX_DEPTH + 1)),
            format!("column 258: expression nested too deeply (more than {MAX_DEPTH} levels)")
        );
        assert!(error(&nested(100_000)).contains("nested too deeply"));
        assert!(error(&"not ".repeat(100_000)).contains("nested too deeply"));
        assert!(error(&"-".repeat(100_000)).contains("nested too deeply"));
        assert!(error(&vec!["1"; 100_000].join("+")).contains("nested too deeply"));
        // Long and/or chains are flat, so they stay usable.
        assert_eq!(ev(&vec!["x > 1"; 100_000].join(" and ")), Bool(true));
        assert_eq!(ev(&format!("{} or x = 10", vec!["missing"; 50_000].join(" or "))), Bool(true));
        // Random token soup must only ever produce Ok or Err, never a panic.
        let parts = [
            "(", ")", "x", "1", ".", "e", "'", "\"", "\\", " and ", " not ", "<", "=", "!", "-", "%", " like ", " ",
            "é", "_", "||", "0",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            let mut s = String::new();
            for _ in 0..(seed % 12) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                s.push_str(parts[(seed >> 33) as usize % parts.len()]);
            }
            if let Ok(f) = Filter::parse(&s) {
                let _ = (f.matches(&record), f.variables());
            }
        }
    }

    #[test]
    fn variables_and_source() {
        let src = "b > a and a < t1 or warm and c like 'x' and (T2 + b) > 0 or Handler_read_key1";
        let f = Filter::parse(src).unwrap();
        assert_eq!(
            f.variables(),
            ["Execution_time1", "Execution_time2", "Handler_read_key1", "Temperature", "a", "b", "c"]
        );
        assert_eq!(f.source(), src);
        assert!(Filter::parse("1 + 'a' = true").unwrap().variables().is_empty());
    }
}
