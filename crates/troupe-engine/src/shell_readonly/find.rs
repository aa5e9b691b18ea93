//! `find`: its starting points and an expression made only of the tests and actions
//! listed here (each with the number of words it takes). Anything else asks —
//! `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint*`, `-fls` (run or
//! write), `-files0-from` (starting points read from a file), `-L`/`-follow`
//! (follows symbolic links out of the workspace), and every predicate not known.

/// Predicates that may be used and how many words follow each.
const PREDICATES: &[(&str, usize)] = &[
    ("-name", 1),
    ("-iname", 1),
    ("-path", 1),
    ("-ipath", 1),
    ("-wholename", 1),
    ("-iwholename", 1),
    ("-regex", 1),
    ("-iregex", 1),
    ("-regextype", 1),
    ("-lname", 1),
    ("-ilname", 1),
    ("-type", 1),
    ("-xtype", 1),
    ("-size", 1),
    ("-empty", 0),
    ("-newer", 1),
    ("-anewer", 1),
    ("-cnewer", 1),
    ("-samefile", 1),
    ("-mtime", 1),
    ("-mmin", 1),
    ("-atime", 1),
    ("-amin", 1),
    ("-ctime", 1),
    ("-cmin", 1),
    ("-used", 1),
    ("-user", 1),
    ("-group", 1),
    ("-uid", 1),
    ("-gid", 1),
    ("-nouser", 0),
    ("-nogroup", 0),
    ("-perm", 1),
    ("-links", 1),
    ("-inum", 1),
    ("-readable", 0),
    ("-writable", 0),
    ("-executable", 0),
    ("-fstype", 1),
    ("-true", 0),
    ("-false", 0),
    ("-daystart", 0),
    ("-maxdepth", 1),
    ("-mindepth", 1),
    ("-depth", 0),
    ("-d", 0),
    ("-mount", 0),
    ("-xdev", 0),
    ("-noleaf", 0),
    ("-warn", 0),
    ("-nowarn", 0),
    ("-ignore_readdir_race", 0),
    ("-noignore_readdir_race", 0),
    ("-print", 0),
    ("-print0", 0),
    ("-printf", 1),
    ("-ls", 0),
    ("-prune", 0),
    ("-quit", 0),
    ("-not", 0),
    ("-and", 0),
    ("-or", 0),
    ("-a", 0),
    ("-o", 0),
    ("!", 0),
    ("(", 0),
    (")", 0),
    (",", 0),
];

/// The starting points of a `find` command line, or why it asks.
pub(super) fn starting_points(args: &[String]) -> Result<Vec<String>, String> {
    let mut words = args.iter().peekable();
    // Leading options: `-H` and `-P` (`-L` follows links; `-D`, `-O` are left out).
    while let Some(arg) = words.peek() {
        match arg.as_str() {
            "-H" | "-P" => {
                words.next();
            }
            "-L" => return Err("`find -L` follows symbolic links (they may lead outside)".into()),
            _ => break,
        }
    }
    let mut points = Vec::new();
    while let Some(arg) = words.peek() {
        if arg.starts_with('-') || matches!(arg.as_str(), "!" | "(" | ")" | ",") {
            break;
        }
        points.push((*arg).clone());
        words.next();
    }
    while let Some(arg) = words.next() {
        let Some(arity) = arity(arg) else {
            return Err(format!(
                "`find {arg}` is not a test or action known to be read-only"
            ));
        };
        for _ in 0..arity {
            if words.next().is_none() {
                return Err(format!("`find {arg}` without its value"));
            }
        }
    }
    Ok(points)
}

/// Words taken by a known predicate (`-newerXY` included).
fn arity(arg: &str) -> Option<usize> {
    if let Some(xy) = arg.strip_prefix("-newer") {
        let time = |c: char| "aBcmt".contains(c);
        let mut chars = xy.chars();
        if let (Some(x), Some(y), None) = (chars.next(), chars.next(), chars.next()) {
            if time(x) && time(y) && x != 't' {
                return Some(1);
            }
        }
    }
    PREDICATES
        .iter()
        .find(|(name, _)| *name == arg)
        .map(|(_, n)| *n)
}
