//! SQL is never built from strings: every statement's values are bound.

/// Raw SQL in the service takes bind parameters; none is spliced together
/// with `format!`.
#[test]
fn no_sql_is_built_from_strings() {
    let mut offenders = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let compact: String = text.split_whitespace().collect();
        for call in [
            "sql_query(format!",
            "sql_query(&format!",
            "sql::<",
            "batch_execute(&format!",
        ] {
            if call == "sql::<" {
                // `sql::<T>("literal")` is fine; a formatted argument is not.
                if compact.contains("sql::<")
                    && compact.split("sql::<").skip(1).any(|rest| {
                        rest.split_once(">(").is_some_and(|(_, arg)| {
                            arg.starts_with("format!") || arg.starts_with("&format!")
                        })
                    })
                {
                    offenders.push(path.display().to_string());
                }
            } else if compact.contains(call) {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "SQL built with format! in {offenders:?}"
    );
}
