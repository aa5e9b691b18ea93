//! Reading a line of `/proc/<pid>/stat` (the text only: callers read the file).

/// The fields after the command name (field 2, in parentheses, which may itself hold
/// spaces and parentheses), from the state (field 3) on.
pub fn fields_after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_skipped_whole() {
        let stat = "42 (odd ) name) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 0";
        let fields: Vec<&str> = fields_after_name(stat).expect("fields").collect();
        assert_eq!(fields[0], "S");
        assert_eq!(fields[2], "42", "the process group (field 5)");
        assert_eq!(fields[19], "777", "the start time (field 22)");
        assert!(fields_after_name("no name here").is_none());
    }
}
