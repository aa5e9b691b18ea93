//! The kernel sandbox's cost per command: spawns `/bin/true` N times (default 200)
//! without a sandbox and under each mode — in the allow-listed world and, for
//! comparison, with Landlock alone over the host's files — interleaved, the sandbox prepared for every
//! spawn as Troupe does (`SandboxPolicy::prepare` then `apply_to`), and prints the
//! medians and the differences. Also the median of `prepare` alone.
//!
//! Usage: cargo run --release --example bench_sandbox -- [N]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use troupe::platform::sandbox::{
    landlock_abi, ProtectionStrategy, SandboxError, SandboxMode, SandboxPolicy,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200);
    let Some(abi) = landlock_abi() else {
        eprintln!("Landlock is not available on this kernel: nothing to measure");
        return Ok(());
    };
    let ws = std::env::temp_dir().join(format!("bench-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(ws.join(".git"))?;
    let result = run(n, abi, &ws);
    let _ = std::fs::remove_dir_all(&ws);
    result
}

fn run(n: usize, abi: u8, ws: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let home = troupe::settings::home_dir();
    let policy = |mode| SandboxPolicy {
        mode,
        workspace_roots: vec![ws.to_path_buf()],
        writable_roots: Vec::new(),
        network: true,
        deny_read: SandboxPolicy::default_deny_read(&home, &troupe::settings::troupe_home()),
        readable_roots: Vec::new(),
        home: home.clone(),
    };
    let ww = policy(SandboxMode::WorkspaceWrite);
    let ro = policy(SandboxMode::ReadOnly);
    if let Some(p) = ww.prepare()? {
        println!(
            "Landlock ABI {abi}; workspace-write protection {:?}, {} trees bound",
            p.protection(),
            p.rule_count()
        );
    }
    let world = ProtectionStrategy::Auto;
    let host = ProtectionStrategy::MountNamespace;
    let series: [(&str, Option<(&SandboxPolicy, ProtectionStrategy)>); 5] = [
        ("unsandboxed", None),
        ("world, workspace-write", Some((&ww, world))),
        ("world, read-only", Some((&ro, world))),
        ("Landlock only, workspace-write", Some((&ww, host))),
        ("Landlock only, read-only", Some((&ro, host))),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); series.len()];
    let mut prepare = Vec::new();
    for _ in 0..n {
        for (i, (_, how)) in series.iter().enumerate() {
            times[i].push(spawn(*how)?);
        }
        let started = Instant::now();
        let _ = ww.prepare()?;
        prepare.push(started.elapsed());
    }
    let base = median(&mut times[0]);
    println!("{n} spawns of /bin/true each, interleaved, prepare + spawn + wait; medians:");
    for (i, (name, _)) in series.iter().enumerate() {
        let m = median(&mut times[i]);
        println!(
            "  {name:<32} {:>8.3} ms  (+{:.3} ms)",
            ms(m),
            ms(m.saturating_sub(base))
        );
    }
    println!(
        "  prepare alone (world, workspace-write) {:>8.3} ms",
        ms(median(&mut prepare))
    );
    Ok(())
}

/// One spawn and wait; with `policy`, the sandbox is prepared for this spawn.
fn spawn(how: Option<(&SandboxPolicy, ProtectionStrategy)>) -> Result<Duration, SandboxError> {
    let started = Instant::now();
    let mut cmd = Command::new("/bin/true");
    cmd.stdin(Stdio::null()).current_dir(std::env::temp_dir());
    if let Some((policy, strategy)) = how {
        if let Some(prepared) = policy.prepare_with(strategy)? {
            prepared.apply_to(&mut cmd);
        }
    }
    let status = cmd.status()?;
    if !status.success() {
        return Err(SandboxError::Io(std::io::Error::other(format!(
            "/bin/true failed: {status}"
        ))));
    }
    Ok(started.elapsed())
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
