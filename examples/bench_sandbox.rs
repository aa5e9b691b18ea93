//! The kernel sandbox's cost per command: spawns `/bin/true` N times (default 200)
//! without a sandbox and under each mode, interleaved, the sandbox prepared for every
//! spawn as Troupe does (`SandboxPolicy::prepare` then `apply_to`), and prints the
//! medians and the differences. Also the median of `prepare` alone.
//!
//! Usage: cargo run --release --example bench_sandbox -- [N]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use troupe::platform::sandbox::{landlock_abi, SandboxError, SandboxMode, SandboxPolicy};

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
            "Landlock ABI {abi}; workspace-write protection {:?}, {} rules",
            p.protection(),
            p.rule_count()
        );
    }
    let (mut plain, mut with_ww, mut with_ro, mut prepare) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        plain.push(spawn(None)?);
        with_ww.push(spawn(Some(&ww))?);
        with_ro.push(spawn(Some(&ro))?);
        let started = Instant::now();
        let _ = ww.prepare()?;
        prepare.push(started.elapsed());
    }
    let base = median(&mut plain);
    let ww_m = median(&mut with_ww);
    let ro_m = median(&mut with_ro);
    println!("{n} spawns of /bin/true each, interleaved; medians:");
    println!("  unsandboxed                      {:>8.3} ms", ms(base));
    println!(
        "  workspace-write (prepare+spawn)  {:>8.3} ms  (+{:.3} ms)",
        ms(ww_m),
        ms(ww_m.saturating_sub(base))
    );
    println!(
        "  read-only (prepare+spawn)        {:>8.3} ms  (+{:.3} ms)",
        ms(ro_m),
        ms(ro_m.saturating_sub(base))
    );
    println!(
        "  prepare alone (workspace-write)  {:>8.3} ms",
        ms(median(&mut prepare))
    );
    Ok(())
}

/// One spawn and wait; with `policy`, the sandbox is prepared for this spawn.
fn spawn(policy: Option<&SandboxPolicy>) -> Result<Duration, SandboxError> {
    let started = Instant::now();
    let mut cmd = Command::new("/bin/true");
    cmd.stdin(Stdio::null()).current_dir(std::env::temp_dir());
    if let Some(policy) = policy {
        if let Some(prepared) = policy.prepare()? {
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
