//! Built-in workloads: our own Lua scripts (in `workloads/`), embedded in
//! the binary and resolvable by name, both as tests and as `require` modules.

/// (name, source) of every built-in script, modules included.
pub const ALL: &[(&str, &str)] = &[
    ("oltp_common", include_str!("../workloads/oltp_common.lua")),
    ("oltp_read_only", include_str!("../workloads/oltp_read_only.lua")),
    ("oltp_read_write", include_str!("../workloads/oltp_read_write.lua")),
    ("oltp_write_only", include_str!("../workloads/oltp_write_only.lua")),
    ("oltp_point_select", include_str!("../workloads/oltp_point_select.lua")),
    ("oltp_update_index", include_str!("../workloads/oltp_update_index.lua")),
    ("oltp_update_non_index", include_str!("../workloads/oltp_update_non_index.lua")),
    ("oltp_insert", include_str!("../workloads/oltp_insert.lua")),
    ("oltp_delete", include_str!("../workloads/oltp_delete.lua")),
    ("bulk_insert", include_str!("../workloads/bulk_insert.lua")),
    ("select_random_points", include_str!("../workloads/select_random_points.lua")),
    ("select_random_ranges", include_str!("../workloads/select_random_ranges.lua")),
    ("legacy_common", include_str!("../workloads/legacy_common.lua")),
    ("oltp_simple", include_str!("../workloads/oltp_simple.lua")),
    ("select", include_str!("../workloads/select.lua")),
    ("oltp_complex_ro", include_str!("../workloads/oltp_complex_ro.lua")),
    ("oltp_complex_rw", include_str!("../workloads/oltp_complex_rw.lua")),
    ("update_index", include_str!("../workloads/update_index.lua")),
    ("update_non_index", include_str!("../workloads/update_non_index.lua")),
    ("insert", include_str!("../workloads/insert.lua")),
    ("delete", include_str!("../workloads/delete.lua")),
    ("legacy_select_random_points", include_str!("../workloads/legacy_select_random_points.lua")),
    ("legacy_select_random_ranges", include_str!("../workloads/legacy_select_random_ranges.lua")),
];

/// The source of a built-in script by name.
pub fn builtin(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The name of a test workload the spec does not name: the test, or a
/// script's file name without `.lua` (reports find workloads by it).
pub fn test_workload_name(test: &str) -> String {
    test.rsplit('/').next().unwrap_or(test).trim_end_matches(".lua").to_string()
}
