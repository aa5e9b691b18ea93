//! Making the sandbox's refusals visible: when a sandboxed command's output shows a
//! denial (`Permission denied`, `Operation not permitted`, `Read-only file system`, a
//! refused socket), a line naming the mode and the setting that would allow it.

use super::SandboxMode;

/// Error texts the sandbox's refusals show up as (EACCES from Landlock, EPERM from
/// seccomp and signal scoping, EROFS/EBUSY from the read-only bind mounts).
const DENIAL_MARKS: [&str; 5] = [
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Device or resource busy",
    "EACCES",
];

/// Further marks of a refused connection (only looked for without network).
const NETWORK_MARKS: [&str; 3] = [
    "Couldn't connect to server",
    "Failed to connect",
    "Network is unreachable",
];

/// How a command came to run in its sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// `sandbox.mode` (the user approved the command, or yolo).
    Configured,
    /// It ran without asking because the classifier found it read-only.
    ReadOnlyUnasked,
}

/// Whether `output` looks like the sandbox refused something (`network`: whether the
/// command had network access).
pub fn shows_denial(output: &str, network: bool) -> bool {
    DENIAL_MARKS.iter().any(|m| output.contains(m))
        || (!network && NETWORK_MARKS.iter().any(|m| output.contains(m)))
        || shows_hidden_path(output)
}

/// Whether `output` says a path the world does not show is missing (`HOME`, `/run`,
/// other users' homes): the sandbox hid it, rather than it not existing.
fn shows_hidden_path(output: &str) -> bool {
    let home = crate::settings::home_dir();
    let home = home.to_string_lossy();
    output.lines().any(|line| {
        line.contains("No such file or directory")
            && ([
                "/run/",
                "/var/run/",
                "/home/",
                "/root/",
                "/mnt/",
                "/media/",
                "~/",
            ]
            .iter()
            .any(|p| line.contains(p))
                || (home.len() > 1 && line.contains(home.as_ref())))
    })
}

/// The `[sandbox] …` line for a command run in `mode` whose `output` shows a denial;
/// `None` for `off` or when the output shows none.
pub fn note(mode: SandboxMode, why: Why, network: bool, output: &str) -> Option<String> {
    let network = network && mode == SandboxMode::WorkspaceWrite;
    if mode == SandboxMode::Off || !shows_denial(output, network) {
        return None;
    }
    Some(note_text(mode, why, network))
}

/// The line for protected directories a command made, which were moved aside.
pub fn moved_aside_note(moved: &[(std::path::PathBuf, std::path::PathBuf)]) -> Option<String> {
    if moved.is_empty() {
        return None;
    }
    let list: Vec<String> = moved
        .iter()
        .map(|(made, to)| format!("{} (moved to {})", made.display(), to.display()))
        .collect();
    Some(format!(
        "[sandbox] the command created {}: commands may not create .git, .troupe, .gemini or .agents in a workspace root (configuration a command writes must not run in a later step); ask the user to create it themselves",
        list.join(", ")
    ))
}

/// The text of the line, whatever the output (see [`note`]).
pub fn note_text(mode: SandboxMode, why: Why, network: bool) -> String {
    const UNREADABLE: &str = "commands see only the system directories, the usual toolchains (~/.cargo, ~/.rustup, ~/.pyenv, …), the workspace and a private /tmp: the rest of HOME, Troupe's home and the host's sockets do not exist for them (sandbox.readable_roots adds directories to read)";
    match (mode, why) {
        (SandboxMode::ReadOnly, Why::ReadOnlyUnasked) => format!(
            "[sandbox] read-only denied this command: it ran without asking because it looks read-only, so it ran under the read-only sandbox: it may not write any file, use the network or run programs from outside the system directories; {UNREADABLE}. A command that needs more must be approved by the user; it then runs under sandbox.mode."
        ),
        (SandboxMode::ReadOnly, Why::Configured) => format!(
            "[sandbox] read-only denied this command: it may not write any file, use the network or run programs from outside the system directories; {UNREADABLE}. To allow it: --sandbox workspace-write or --sandbox off (or sandbox.mode = \"workspace-write\" / \"off\")"
        ),
        _ => {
            let (net, net_fix) = if network {
                ("", "")
            } else {
                (
                    "; it has no network (sandbox.network = false)",
                    ", or sandbox.network = true for the network",
                )
            };
            format!(
                "[sandbox] workspace-write denied this command: it may write only inside the workspace roots, its private /tmp and sandbox.writable_roots; .git, .troupe, .gemini and .agents are read-only; {UNREADABLE}{net}. To allow it: --sandbox off (or sandbox.mode = \"off\"), or add the directory to sandbox.writable_roots{net_fix}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_name_the_mode_and_the_setting() {
        let ww = note(
            SandboxMode::WorkspaceWrite,
            Why::Configured,
            true,
            "touch: cannot touch '../x': Permission denied",
        )
        .expect("note");
        assert!(ww.starts_with("[sandbox] workspace-write denied this command"));
        assert!(ww.contains("sandbox.writable_roots") && ww.contains("--sandbox off"));
        assert!(!ww.contains("sandbox.network = true"));
        let no_net = note(
            SandboxMode::WorkspaceWrite,
            Why::Configured,
            false,
            "curl: (7) Failed to connect to 127.0.0.1 port 9",
        )
        .expect("note");
        assert!(no_net.contains("sandbox.network = true"));
        let ro = note(
            SandboxMode::ReadOnly,
            Why::ReadOnlyUnasked,
            true,
            "bash: P: Read-only file system",
        )
        .expect("note");
        assert!(ro.contains("without asking"));
        assert_eq!(
            note(
                SandboxMode::Off,
                Why::Configured,
                false,
                "Permission denied"
            ),
            None
        );
        assert_eq!(
            note(SandboxMode::ReadOnly, Why::Configured, false, "all good"),
            None
        );
    }
}
