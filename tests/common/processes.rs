//! The processes of the machine, as the tests that check what outlives a run see them.

use std::process::Command;

/// Live (non-zombie) processes as `(pid, pgid, args)`.
pub fn processes() -> Vec<(i32, i32, String)> {
    let out = Command::new("ps")
        .args(["-eo", "pid=,pgid=,stat=,args="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let pid = f.next()?.parse().ok()?;
            let pgid = f.next()?.parse().ok()?;
            let stat = f.next()?;
            if stat.starts_with('Z') {
                return None;
            }
            Some((pid, pgid, f.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// Waits (bounded: 30 s, which only a loaded machine comes near) until no live process
/// is in group `pgid` (when one is given) or has `marker` in its arguments; returns what
/// is left.
pub fn survivors(pgid: Option<i32>, marker: &str) -> Vec<(i32, i32, String)> {
    let mut left = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        left = processes()
            .into_iter()
            .filter(|(_, g, args)| Some(*g) == pgid || args.contains(marker))
            .collect();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    left
}
