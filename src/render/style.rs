//! The CSS of dbbench's HTML pages (`dbbench report`, `querydiff`).

pub(crate) const STYLE: &str = "
body{font-family:sans-serif;margin:0 auto;max-width:1180px;padding:0 16px 40px;color:#222;line-height:1.4}
h1{font-size:1.6em;margin:18px 0 4px}h2{font-size:1.25em;margin-top:32px;border-bottom:1px solid #ccc;padding-bottom:2px}
h3{font-size:1.05em;margin:20px 0 6px}
.context{color:#444;margin:0;padding-left:18px}.warn{background:#fff4e0;border-left:4px solid #e69f00;padding:6px 10px;margin:8px 0}
nav a{margin-right:14px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4}
th{background:#f4f4f4;text-align:right}td{text-align:right;white-space:nowrap}td.l,th.l{text-align:left}
tr.group td{font-weight:bold;text-align:left;background:#fafafa}td.i1{padding-left:22px}
.legend{font-size:12px;color:#555;margin:2px 0 14px;padding-left:18px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts svg{border:1px solid #eee;background:#fff}
td.wrap{white-space:normal;text-align:left;max-width:640px;word-break:break-word}
details{margin:6px 0}summary{cursor:pointer}
.hidden-series{opacity:0.12}
";
