//! Manifests as an ordered tree, printed as YAML (for people: `--dry-run`)
//! or JSON (for `kubectl apply`). Keys keep the order they were added in
//! (`apiVersion`, `kind`, `metadata`, `spec`, as kubectl prints them), which
//! serde_json's map (sorted) would not, and the output is the same for the
//! same inputs.

/// One value of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// An empty map, to fill with [`Node::put`].
    pub fn map() -> Node {
        Node::Map(Vec::new())
    }

    /// Adds `key: value` to a map (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Node>) -> Node {
        self.put(key, value);
        self
    }

    /// Adds `key: value` to a map.
    pub fn put(&mut self, key: &str, value: impl Into<Node>) {
        match self {
            Node::Map(entries) => entries.push((key.to_string(), value.into())),
            _ => unreachable!("put on a non-map node"),
        }
    }

    /// JSON text (compact, keys in insertion order).
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Node::Str(s) => out.push_str(&json_string(s)),
            Node::Int(i) => out.push_str(&i.to_string()),
            Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Node::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Node::Map(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&json_string(k));
                    out.push(':');
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }

    /// One YAML document (block style, two-space indentation), without
    /// the `---` separator.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Node::Map(entries) if !entries.is_empty() => write_map(entries, 0, &mut out),
            Node::List(items) if !items.is_empty() => write_list(items, 0, &mut out),
            other => {
                out.push_str(&scalar(other, 0));
                out.push('\n');
            }
        }
        out
    }
}

impl From<&str> for Node {
    fn from(s: &str) -> Node {
        Node::Str(s.to_string())
    }
}

impl From<String> for Node {
    fn from(s: String) -> Node {
        Node::Str(s)
    }
}

impl From<i64> for Node {
    fn from(i: i64) -> Node {
        Node::Int(i)
    }
}

impl From<bool> for Node {
    fn from(b: bool) -> Node {
        Node::Bool(b)
    }
}

impl From<Vec<Node>> for Node {
    fn from(v: Vec<Node>) -> Node {
        Node::List(v)
    }
}

/// A JSON string literal (serde_json's escaping), also a valid YAML
/// double-quoted scalar.
fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serialises")
}

fn indent(n: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// Whether a node is printed on the line of its key (`key: value`).
fn is_inline(n: &Node) -> bool {
    match n {
        Node::Map(e) => e.is_empty(),
        Node::List(l) => l.is_empty(),
        Node::Str(s) => block_text(s).is_none(),
        _ => true,
    }
}

fn write_map(entries: &[(String, Node)], level: usize, out: &mut String) {
    for (k, v) in entries {
        indent(level, out);
        out.push_str(&key(k));
        out.push(':');
        write_value(v, level, out);
    }
}

fn write_list(items: &[Node], level: usize, out: &mut String) {
    for item in items {
        indent(level, out);
        out.push('-');
        match item {
            // `- key: value` with the rest of the map aligned under the key.
            Node::Map(entries) if !entries.is_empty() => {
                out.push(' ');
                let mut first = String::new();
                write_map(&entries[..1], level + 2, &mut first);
                out.push_str(first.trim_start_matches(' '));
                write_map(&entries[1..], level + 2, out);
            }
            other => write_value(other, level, out),
        }
    }
}

/// The value after `key:` or `-`: inline scalars on the same line, maps
/// and lists below, multi-line text as a literal block.
fn write_value(v: &Node, level: usize, out: &mut String) {
    if is_inline(v) {
        out.push(' ');
        out.push_str(&scalar(v, level));
        out.push('\n');
        return;
    }
    match v {
        Node::Map(entries) => {
            out.push('\n');
            write_map(entries, level + 2, out);
        }
        Node::List(items) => {
            out.push('\n');
            write_list(items, level + 2, out);
        }
        Node::Str(s) => {
            let (header, lines) = block_text(s).expect("not inline: a block");
            out.push(' ');
            out.push_str(&header);
            out.push('\n');
            for line in lines {
                if !line.is_empty() {
                    indent(level + 2, out);
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
        _ => unreachable!(),
    }
}

/// A scalar on one line: strings always double-quoted (no YAML 1.1
/// surprises: `on`, `no`, `010`, `1e3` stay strings).
fn scalar(v: &Node, _level: usize) -> String {
    match v {
        Node::Str(s) => json_string(s),
        Node::Int(i) => i.to_string(),
        Node::Bool(b) => b.to_string(),
        Node::Map(_) => "{}".into(),
        Node::List(_) => "[]".into(),
    }
}

/// A key: bare when it is a plain name, quoted otherwise.
fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && k.starts_with(|c: char| c.is_ascii_alphabetic());
    if plain {
        k.to_string()
    } else {
        json_string(k)
    }
}

/// Multi-line text as a literal block (`|`, `|-` or `|+`, with an
/// indentation indicator when the first line starts with a space): the
/// header and the lines. None when the text is one line or holds
/// characters a block cannot carry (controls other than newline, a
/// carriage return, a BOM), which are then double-quoted.
fn block_text(s: &str) -> Option<(String, Vec<&str>)> {
    if !s.contains('\n') || s.chars().any(|c| (c.is_control() && c != '\n') || c == '\u{feff}' || c == '\u{2028}') {
        return None;
    }
    let body = s.trim_end_matches('\n');
    let trailing = s.len() - body.len();
    if body.is_empty() {
        return None;
    }
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let lines: Vec<&str> =
        if chomp == "+" { s[..s.len() - 1].split('\n').collect() } else { body.split('\n').collect() };
    // A block's indentation comes from its first non-empty line unless given.
    let first = lines.iter().find(|l| !l.is_empty()).copied().unwrap_or("");
    let indicator = if first.starts_with(' ') { "2" } else { "" };
    Some((format!("|{indicator}{chomp}"), lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_keeps_order_and_quotes_strings() {
        let n = Node::map()
            .with("apiVersion", "v1")
            .with("kind", "ConfigMap")
            .with("metadata", Node::map().with("name", "x").with("labels", Node::map().with("dbbench/run", "on")))
            .with("list", vec![Node::map().with("a", 1i64).with("b", true), Node::from("s")])
            .with("empty", Node::map());
        assert_eq!(
            n.to_yaml(),
            "apiVersion: \"v1\"\nkind: \"ConfigMap\"\nmetadata:\n  name: \"x\"\n  labels:\n    dbbench/run: \"on\"\n\
             list:\n  - a: 1\n    b: true\n  - \"s\"\nempty: {}\n"
        );
        assert_eq!(
            n.to_json(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"dbbench/run":"on"}},"list":[{"a":1,"b":true},"s"],"empty":{}}"#
        );
    }

    #[test]
    fn multi_line_text_is_a_literal_block_with_the_right_chomping() {
        let n = Node::map().with("a", "x\n  y\n").with("b", "x\ny").with("c", "x\n\n").with("d", " x\ny\n");
        assert_eq!(n.to_yaml(), "a: |\n  x\n    y\nb: |-\n  x\n  y\nc: |+\n  x\n\nd: |2\n   x\n  y\n");
        // Controls cannot be in a block: quoted.
        assert_eq!(Node::map().with("a", "x\ty\nz").to_yaml(), "a: \"x\\ty\\nz\"\n");
    }
}
