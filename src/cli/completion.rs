//! `troupe completion SHELL` and `troupe man`: the shell completion scripts and the
//! manual page, both generated from the command line's own definition, so they always
//! list the flags this build has.

use std::io::Write;

use clap::CommandFactory;

use super::Cli;

/// What `troupe completion` without a shell says (exit 2, as a usage error).
const NO_SHELL: &str = "troupe completion needs a shell: bash, zsh, fish, elvish or powershell \
(e.g. `troupe completion bash`). A prompt that starts with the word \"completion\" goes \
after `--`: troupe -- completion …";

/// Writes the completion script of `shell` to stdout; without a shell, says which
/// there are and returns 2.
pub fn completion(shell: Option<clap_complete::Shell>) -> std::io::Result<i32> {
    let Some(shell) = shell else {
        eprintln!("{NO_SHELL}");
        return Ok(2);
    };
    // Generated into memory first: the generator panics when stdout closes early
    // (`troupe completion bash | head`); a write error here is only an error.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "troupe", &mut script);
    write_out(&script)
}

/// Writes the manual page `troupe(1)` as troff to stdout (what a package installs as
/// `troupe.1`).
pub fn man() -> std::io::Result<i32> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    write_out(&page)
}

fn write_out(bytes: &[u8]) -> std::io::Result<i32> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(0),
        // The reader had what it wanted (`| head`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(e),
    }
}
