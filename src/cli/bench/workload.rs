//! What a benchmark run asks the model turn to do: the workspace (generated, a real
//! directory, or a copy of one) and the N function calls of the scripted turn — one
//! tool, a weighted mix with edits that conflict on shared files, or a synthetic tool
//! with a set latency.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::BenchError;
use crate::cli::{BenchArgs, BenchTool};
use crate::tools::{glob, grep, list_directory, read_file, replace, shell, write_file};

/// Tools a workload can call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ReadFile,
    ListDirectory,
    Glob,
    GrepSearch,
    Replace,
    WriteFile,
    Shell,
    Synthetic,
    /// An MCP server's tool (`--mcp SERVER/TOOL`), called as an echo tool.
    Mcp,
}

impl Kind {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            read_file::NAME => Kind::ReadFile,
            list_directory::NAME => Kind::ListDirectory,
            glob::NAME => Kind::Glob,
            grep::NAME => Kind::GrepSearch,
            replace::NAME => Kind::Replace,
            write_file::NAME => Kind::WriteFile,
            shell::NAME => Kind::Shell,
            "synthetic" => Kind::Synthetic,
            _ => return None,
        })
    }

    /// Changes files (needs a generated workspace or --allow-writes).
    fn writes(self) -> bool {
        matches!(self, Kind::Replace | Kind::WriteFile | Kind::Shell)
    }
}

/// A latency and its jitter, in µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub micros: u64,
    pub jitter: u64,
}

/// What the calls of the turn are.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Tools and weights (one entry with weight 1 for a single tool).
    pub mix: Vec<(Kind, u32)>,
    pub latency: Option<Latency>,
    pub seed: u64,
    /// Files in a generated workspace.
    pub files: Option<usize>,
    /// With `--mcp SERVER/TOOL`: the name the model calls the server's tool by.
    pub mcp_tool: Option<String>,
    /// With `--mcp SERVER/TOOL`: the server's name and its own name of the tool.
    pub mcp_target: Option<(String, String)>,
    /// `--record-session`: the turn is recorded to a session file, as a real one is.
    pub record_session: bool,
}

impl Workload {
    pub fn from_args(args: &BenchArgs) -> Result<Self, BenchError> {
        let latency = args.latency.as_deref().map(parse_latency).transpose()?;
        let mcp_tool = args
            .mcp_spec()
            .map(crate::mcp::bench_call_name)
            .transpose()
            .map_err(BenchError::Usage)?;
        if mcp_tool.is_some() && (args.mix.is_some() || latency.is_some()) {
            return Err(BenchError::Usage(
                "--mcp calls one MCP tool; it does not combine with --mix or --latency".into(),
            ));
        }
        let mix = match (&args.mix, latency) {
            _ if mcp_tool.is_some() => vec![(Kind::Mcp, 1)],
            (Some(text), _) => parse_mix(text)?,
            (None, Some(_)) => vec![(Kind::Synthetic, 1)],
            (None, None) => vec![(
                match args.tool.builtin() {
                    BenchTool::ReadFile => Kind::ReadFile,
                    BenchTool::ListDirectory => Kind::ListDirectory,
                    BenchTool::Glob => Kind::Glob,
                },
                1,
            )],
        };
        if mix.iter().any(|(k, _)| *k == Kind::Synthetic) && latency.is_none() {
            return Err(BenchError::Usage(
                "the synthetic tool needs --latency (e.g. 5ms±2ms)".into(),
            ));
        }
        if args.workspace.is_some() && !args.allow_writes && mix.iter().any(|(k, _)| k.writes()) {
            return Err(BenchError::Usage(
                "--workspace runs read-only tools only; add --allow-writes to edit a copy".into(),
            ));
        }
        Ok(Self {
            mix,
            latency,
            seed: args.seed,
            files: args.files,
            mcp_target: args.mcp_spec().and_then(|spec| {
                let (server, tool) = spec.strip_prefix("mcp:").unwrap_or(spec).split_once('/')?;
                Some((server.to_string(), tool.to_string()))
            }),
            mcp_tool,
            record_session: args.record_session,
        })
    }

    /// True when every call is a read of one kind the bare loop can do too.
    pub fn floor_kind(&self) -> Option<Kind> {
        match self.mix.as_slice() {
            [(k @ (Kind::ReadFile | Kind::ListDirectory | Kind::Glob), _)] => Some(*k),
            _ => None,
        }
    }
}

/// `5ms`, `5ms±2ms`, `5ms+-2ms`, `300us`, `1s`.
pub fn parse_latency(text: &str) -> Result<Latency, BenchError> {
    let bad = || BenchError::Usage(format!("--latency: `{text}` is not like 5ms or 5ms±2ms"));
    let (base, jitter) = match text.split_once('±').or_else(|| text.split_once("+-")) {
        Some((b, j)) => (b, Some(j)),
        None => (text, None),
    };
    let micros = |t: &str| -> Option<u64> {
        let t = t.trim();
        let (num, scale) = if let Some(n) = t.strip_suffix("us") {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix("µs") {
            (n, 1.0)
        } else if let Some(n) = t.strip_suffix("ms") {
            (n, 1e3)
        } else if let Some(n) = t.strip_suffix('s') {
            (n, 1e6)
        } else {
            return None;
        };
        let value: f64 = num.trim().parse().ok()?;
        (value >= 0.0).then(|| (value * scale).round() as u64)
    };
    let micros_base = micros(base).ok_or_else(bad)?;
    let jitter = match jitter {
        Some(j) => micros(j).ok_or_else(bad)?,
        None => 0,
    };
    Ok(Latency {
        micros: micros_base,
        jitter: jitter.min(micros_base),
    })
}

/// `read_file=70,grep_search=10`.
pub fn parse_mix(text: &str) -> Result<Vec<(Kind, u32)>, BenchError> {
    let mut mix = Vec::new();
    for item in text.split(',').filter(|s| !s.trim().is_empty()) {
        let (name, weight) = item.split_once('=').unwrap_or((item, "1"));
        let kind = Kind::parse(name.trim())
            .ok_or_else(|| BenchError::Usage(format!("--mix: unknown tool `{}`", name.trim())))?;
        let weight: u32 = weight
            .trim()
            .parse()
            .map_err(|_| BenchError::Usage(format!("--mix: `{item}` needs a whole weight")))?;
        if weight > 0 {
            mix.push((kind, weight));
        }
    }
    if mix.is_empty() {
        return Err(BenchError::Usage(
            "--mix names no tool with a weight".into(),
        ));
    }
    Ok(mix)
}

/// The workspace the turn runs in, and the files calls pick from.
pub struct BenchWorkspace {
    /// Holds a generated workspace or a copy until the run ends.
    _temp: Option<tempfile::TempDir>,
    pub root: PathBuf,
    /// Files (relative to `root`) reads pick from.
    pub files: Vec<String>,
    /// Files edits share (so they conflict), with the lines each edit replaces.
    hot: Vec<String>,
}

/// Files edits of a mixed workload share.
const HOT_FILES: usize = 4;

impl BenchWorkspace {
    /// A generated workspace of `files` small files (or the files of `dir`).
    pub fn prepare(
        args: &BenchArgs,
        calls: usize,
        workload: &Workload,
    ) -> Result<Self, BenchError> {
        let temp = tempfile::Builder::new().prefix("troupe-bench-").tempdir()?;
        let (root, files) = match &args.workspace {
            Some(dir) => {
                let dir = dir.canonicalize().map_err(|e| {
                    BenchError::Usage(format!("--workspace {}: {e}", dir.display()))
                })?;
                let root = if args.allow_writes {
                    let copy = temp.path().join("ws");
                    let status = std::process::Command::new("cp")
                        .arg("-a")
                        .arg(&dir)
                        .arg(&copy)
                        .status()?;
                    if !status.success() {
                        return Err(BenchError::Usage(format!(
                            "could not copy {} for --allow-writes",
                            dir.display()
                        )));
                    }
                    copy
                } else {
                    dir
                };
                let files = list_files(&root, 10_000);
                if files.is_empty() {
                    return Err(BenchError::Usage(format!(
                        "--workspace {}: no readable files",
                        root.display()
                    )));
                }
                (root, files)
            }
            None => {
                let n = workload.files.unwrap_or(calls.min(10_000)).max(1);
                let root = temp.path().join("ws");
                std::fs::create_dir_all(root.join("files"))?;
                let width = (n - 1).to_string().len();
                let files: Vec<String> =
                    (0..n).map(|i| format!("files/f{i:0width$}.txt")).collect();
                for (i, name) in files.iter().enumerate() {
                    std::fs::write(root.join(name), format!("file {i}\n{}\n", "x".repeat(200)))?;
                }
                (root, files)
            }
        };
        let hot = (0..HOT_FILES)
            .map(|k| format!(".troupe-bench/hot{k}.txt"))
            .collect();
        Ok(Self {
            _temp: Some(temp),
            root,
            files,
            hot,
        })
    }

    /// The N calls, in order; writes the lines the edits will replace.
    pub fn calls(&self, n: usize, workload: &Workload) -> Result<Vec<Value>, BenchError> {
        let mut rng = fastrand::Rng::with_seed(workload.seed);
        let total: u32 = workload.mix.iter().map(|(_, w)| w).sum();
        let mut hot_lines: Vec<Vec<String>> = vec![Vec::new(); self.hot.len()];
        let ext_glob = glob_of(&self.files[0]);
        let mut calls = Vec::with_capacity(n);
        for i in 0..n {
            let kind = if workload.mix.len() == 1 {
                workload.mix[0].0
            } else {
                let mut pick = rng.u32(0..total);
                let mut chosen = workload.mix[0].0;
                for (k, w) in &workload.mix {
                    if pick < *w {
                        chosen = *k;
                        break;
                    }
                    pick -= w;
                }
                chosen
            };
            let file = &self.files[i % self.files.len()];
            let (name, args) = match kind {
                Kind::ReadFile => (read_file::NAME, json!({"file_path": file})),
                Kind::ListDirectory => (list_directory::NAME, json!({"dir_path": parent_of(file)})),
                Kind::Glob => (glob::NAME, json!({"pattern": ext_glob})),
                Kind::GrepSearch => (
                    grep::NAME,
                    json!({"pattern": format!("file {}\\b", i % 97), "dir_path": parent_of(file)}),
                ),
                Kind::Replace => {
                    let k = i % self.hot.len();
                    let line = format!("slot {i} of the benchmark");
                    hot_lines[k].push(line.clone());
                    (
                        replace::NAME,
                        json!({"file_path": self.hot[k], "old_string": line,
                               "new_string": format!("slot {i} edited by call {i}"),
                               "instruction": "benchmark edit"}),
                    )
                }
                Kind::WriteFile => (
                    write_file::NAME,
                    json!({"file_path": format!(".troupe-bench/out{}.txt", i % HOT_FILES),
                           "content": format!("written by call {i}\n")}),
                ),
                Kind::Shell => (
                    shell::NAME,
                    json!({"command": format!("cat {}", shell_quote(file)),
                           "description": "benchmark read"}),
                ),
                Kind::Synthetic => {
                    let lat = workload.latency.unwrap_or(Latency {
                        micros: 0,
                        jitter: 0,
                    });
                    let spread = lat.jitter * 2;
                    let micros =
                        lat.micros - lat.jitter + if spread > 0 { rng.u64(0..=spread) } else { 0 };
                    ("synthetic", json!({"micros": micros}))
                }
                Kind::Mcp => (
                    workload.mcp_tool.as_deref().unwrap_or_default(),
                    json!({"text": format!("call {i}")}),
                ),
            };
            calls.push(json!({"functionCall": {"name": name, "args": args}}));
        }
        if hot_lines.iter().any(|l| !l.is_empty()) {
            std::fs::create_dir_all(self.root.join(".troupe-bench"))?;
            for (k, lines) in hot_lines.iter().enumerate() {
                let mut text = lines.join("\n");
                text.push('\n');
                std::fs::write(self.root.join(&self.hot[k]), text)?;
            }
        }
        Ok(calls)
    }

    /// The same reads done by a bare loop in this process; `None` for other tools.
    pub fn floor(&self, n: usize, kind: Kind) -> Result<Option<usize>, BenchError> {
        let mut bytes = 0usize;
        for i in 0..n {
            let file = self.root.join(&self.files[i % self.files.len()]);
            bytes += match kind {
                Kind::ReadFile => std::fs::read_to_string(&file)?.len(),
                Kind::ListDirectory | Kind::Glob => {
                    std::fs::read_dir(file.parent().unwrap_or(&self.root))?.count()
                }
                _ => return Ok(None),
            };
        }
        Ok(Some(bytes))
    }
}

/// The regular files under `root` (ignore files respected), at most `max`.
fn list_files(root: &Path, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(root).build().flatten() {
        if files.len() >= max {
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            if let Ok(rel) = entry.path().strip_prefix(root) {
                files.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

fn parent_of(file: &str) -> String {
    match Path::new(file).parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_string_lossy().into_owned(),
        _ => ".".into(),
    }
}

/// `dir/*.ext` for the first file's directory and extension.
fn glob_of(file: &str) -> String {
    let ext = Path::new(file)
        .extension()
        .map(|e| format!("*.{}", e.to_string_lossy()))
        .unwrap_or_else(|| "*".into());
    match parent_of(file).as_str() {
        "." => ext,
        dir => format!("{dir}/{ext}"),
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_and_mix_parse() {
        assert_eq!(
            parse_latency("5ms±2ms").unwrap(),
            Latency {
                micros: 5000,
                jitter: 2000
            }
        );
        assert_eq!(parse_latency("300us").unwrap().micros, 300);
        assert_eq!(parse_latency("1ms+-5ms").unwrap().jitter, 1000);
        assert!(parse_latency("fast").is_err());
        let mix = parse_mix("read_file=70,grep_search=10,replace=10,run_shell_command=10").unwrap();
        assert_eq!(mix.len(), 4);
        assert_eq!(mix[2], (Kind::Replace, 10));
        assert!(parse_mix("teleport=5").is_err());
    }
}
