//! The options of a read-only command, read as GNU `getopt_long` reads them (options
//! and operands in any order, `--` ends the options, short options clustered, a short
//! option's value attached or the next word, a long option's after `=` or the next
//! word) — but only the options the command's [`Spec`] lists. Any other option, and
//! any abbreviation of a long one (which the tool itself would accept as the option it
//! abbreviates: `--dereference-r`, `--out=F`), makes the command ask: an exact name is
//! what the tool runs (`getopt_long` prefers an exact match), so only listed options
//! ever run unasked.

/// What a long option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arg {
    /// No value (`--count`).
    No,
    /// A value, after `=` or as the next word (`--max-count=5`, `--max-count 5`).
    Required,
    /// A value only after `=` (`--color`, `--color=never`).
    Optional,
}

/// The options a command may use unasked.
pub(super) struct Spec {
    /// Short options taking no value.
    pub flags: &'static str,
    /// Short options taking a value (the rest of the word, or the next word).
    pub valued: &'static str,
    /// Whether `-5` (an obsolete count or context) is accepted.
    pub digits: bool,
    /// Long options (without `--`) and what they take.
    pub long: &'static [(&'static str, Arg)],
}

/// One option as given: `-o` or `--output` (the name with its dashes), and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt {
    pub name: String,
    pub value: Option<String>,
}

/// A command line split into options and operands.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub opts: Vec<Opt>,
    pub operands: Vec<String>,
}

impl Parsed {
    /// Whether any of `names` (`-r`, `--recursive`) was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|o| names.contains(&o.name.as_str()))
    }

    /// The values of the options called any of `names`.
    pub fn values<'a>(&'a self, names: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
        self.opts
            .iter()
            .filter(|o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_deref())
    }
}

/// Splits `args` by `spec`; an option `spec` does not list (or an abbreviation, or a
/// value missing or given where none is taken) is the reason to ask.
pub(super) fn parse(name: &str, spec: &Spec, args: &[String]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut words = args.iter();
    let mut options_done = false;
    while let Some(arg) = words.next() {
        if options_done || arg == "-" || !arg.starts_with('-') {
            out.operands.push(arg.clone());
        } else if arg == "--" {
            options_done = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (key, attached) = match long.split_once('=') {
                Some((key, value)) => (key, Some(value.to_string())),
                None => (long, None),
            };
            let Some((_, takes)) = spec.long.iter().find(|(n, _)| *n == key) else {
                return Err(format!(
                    "`{name}` option `--{key}` is not one known to be read-only (long options must be spelled out)"
                ));
            };
            let value = match (takes, attached) {
                (Arg::No, Some(_)) => return Err(format!("`{name} --{key}` takes no value")),
                (Arg::Required, None) => Some(
                    words
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("`{name} --{key}` without its value"))?,
                ),
                (_, attached) => attached,
            };
            out.opts.push(Opt {
                name: format!("--{key}"),
                value,
            });
        } else {
            short_cluster(name, spec, arg, &mut words, &mut out)?;
        }
    }
    Ok(out)
}

/// `-abc`, `-n5`, `-e PATTERN`, `-5`.
fn short_cluster<'a>(
    name: &str,
    spec: &Spec,
    arg: &str,
    words: &mut impl Iterator<Item = &'a String>,
    out: &mut Parsed,
) -> Result<(), String> {
    let body = &arg[1..];
    if spec.digits && body.chars().all(|c| c.is_ascii_digit()) {
        out.opts.push(Opt {
            name: "-NUM".into(),
            value: Some(body.to_string()),
        });
        return Ok(());
    }
    for (at, c) in body.char_indices() {
        if spec.flags.contains(c) {
            out.opts.push(Opt {
                name: format!("-{c}"),
                value: None,
            });
        } else if spec.valued.contains(c) {
            let rest = &body[at + c.len_utf8()..];
            let value = if rest.is_empty() {
                words
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("`{name} -{c}` without its value"))?
            } else {
                rest.to_string()
            };
            out.opts.push(Opt {
                name: format!("-{c}"),
                value: Some(value),
            });
            return Ok(());
        } else {
            return Err(format!(
                "`{name}` option `-{c}` is not one known to be read-only"
            ));
        }
    }
    Ok(())
}
