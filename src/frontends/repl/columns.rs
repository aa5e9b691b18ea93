//! Lists of names and what each is, as `/help` and `/tools` print them: every name is
//! padded to the longest one, so the second column lines up however long the names are;
//! a name longer than [`MAX_NAME`] characters gets a line of its own, and its text goes
//! on the next line, under the column.

/// The widest a name column gets.
pub const MAX_NAME: usize = 48;

/// The width of the name column for names of these lengths (in characters).
pub fn name_width(lengths: impl IntoIterator<Item = usize>) -> usize {
    lengths
        .into_iter()
        .filter(|w| *w <= MAX_NAME)
        .max()
        .unwrap_or(0)
}

/// `rows` of (name, text) laid out under a name column `width` wide; `style` dresses
/// a name (colour) after it is measured.
pub fn lay_out(
    rows: &[(String, String)],
    width: usize,
    style: &dyn Fn(&str) -> String,
) -> Vec<String> {
    let mut out = Vec::with_capacity(rows.len());
    for (name, text) in rows {
        let len = name.chars().count();
        if len > width {
            out.push(format!("  {}", style(name)));
            out.push(format!("  {} {text}", " ".repeat(width)));
        } else {
            out.push(format!(
                "  {}{} {text}",
                style(name),
                " ".repeat(width - len)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_line_up_and_an_overlong_one_wraps() {
        let long = "x".repeat(MAX_NAME + 1);
        let rows = vec![
            ("/a".to_string(), "one".to_string()),
            ("/bbbb".to_string(), "two".to_string()),
            (long.clone(), "three".to_string()),
        ];
        let width = name_width(rows.iter().map(|(n, _)| n.chars().count()));
        assert_eq!(width, 5);
        let lines = lay_out(&rows, width, &|n| n.to_string());
        assert_eq!(
            lines,
            vec![
                "  /a    one".to_string(),
                "  /bbbb two".to_string(),
                format!("  {long}"),
                "        three".to_string(),
            ]
        );
    }
}
