//! Which environment variable names hold secrets: one pure rule for every place Troupe
//! decides what a child process may see (`troupe::platform::child_env`) and what it
//! takes out of its own environment at start (`troupe::settings::secrets`); and which
//! file names hold secrets ([`is_secret_file_name`]: a command that names or may reach
//! one is never read-only, `crate::shell_readonly`).
//!
//! The check is by *name* only: values are never inspected, so e.g. a `DATABASE_URL`
//! with an embedded password is passed through.

/// Upper-case suffixes that mark a secret name (the name must *end* with one,
/// or be equal to it without the leading underscore).
const SECRET_SUFFIXES: [&str; 8] = [
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_PAT",
    "_PASSWORD",
    "_PASSWD",
    "_CREDENTIALS",
    "_PRIVATE_KEY",
];

/// Upper-case names that are secret whatever the rules above say. Most of the
/// well-known ones are already caught by a suffix and are listed so that the
/// intent survives a future change of the suffix rules.
const SECRET_NAMES: [&str; 18] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_CLIENT_SECRET",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    // Well-known secrets that no suffix catches.
    "PGPASSWORD",
    "MYSQL_PWD",
    "SECRET",
];

/// True if an environment variable called `name` looks like it holds a
/// secret. Case-insensitive (ASCII).
///
/// Secret: names ending in `_API_KEY`, `_APIKEY`, `_TOKEN`, `_PAT`,
/// `_PASSWORD`, `_PASSWD`, `_CREDENTIALS` or `_PRIVATE_KEY` (or equal to one
/// of those without the underscore, e.g. `TOKEN`); names containing `_SECRET`
/// or starting with `SECRET_`; and a fixed list of well-known names such as
/// `AWS_ACCESS_KEY_ID`, `GITHUB_TOKEN`, `PGPASSWORD`, `MYSQL_PWD`.
///
/// Not secret: everything else, e.g. `PATH`, `HOME`, `SSH_AUTH_SOCK`,
/// `GIT_ASKPASS`, `DATABASE_URL`, and `TOKENIZERS_PARALLELISM` (suffixes match
/// on `_TOKEN` exactly, not `TOKEN` anywhere).
///
/// ```
/// # use troupe_engine::secret_names::is_secret_name;
/// assert!(is_secret_name("openai_api_key"));
/// assert!(!is_secret_name("TOKENIZERS_PARALLELISM"));
/// ```
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let upper = upper.as_str();
    SECRET_NAMES.contains(&upper)
        || SECRET_SUFFIXES
            .iter()
            .any(|suffix| upper.ends_with(suffix) || suffix.strip_prefix('_') == Some(upper))
        || upper.contains("_SECRET")
        || upper.starts_with("SECRET_")
}

/// Lower-case base names of files that hold secrets.
const SECRET_FILES: [&str; 18] = [
    ".env",
    ".envrc",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".dockercfg",
    ".htpasswd",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    "credentials",
    "credentials.json",
];

/// Lower-case endings of private-key and key-store file names.
const SECRET_FILE_ENDINGS: [&str; 6] = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"];

/// True if a file called `name` (a base name, not a path) looks like it holds secrets:
/// `.env`, `.env.*` (`.env.local`, `.env.production`, …), `.envrc`, `.netrc`,
/// `.npmrc`, `.pypirc`, `.pgpass`, `.git-credentials`, SSH private keys (`id_rsa`,
/// `id_ed25519`, …), `credentials`, `gha-creds-*.json` (the workspace's blocked
/// name) and private keys or key stores (`*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.jks`).
/// Case-insensitive (ASCII); trailing dots and spaces and a `:stream` suffix are
/// ignored, as the workspace's blocked-segment check does.
///
/// ```
/// # use troupe_engine::secret_names::is_secret_file_name;
/// assert!(is_secret_file_name(".env.local"));
/// assert!(is_secret_file_name(".envrc"));
/// assert!(!is_secret_file_name("env.rs"));
/// ```
pub fn is_secret_file_name(name: &str) -> bool {
    let head = name.split(':').next().unwrap_or("");
    let lower = head.trim_end_matches([' ', '.']).to_ascii_lowercase();
    let lower = lower.as_str();
    SECRET_FILES.contains(&lower)
        || lower.starts_with(".env.")
        || (lower.starts_with("gha-creds-") && lower.ends_with(".json"))
        || SECRET_FILE_ENDINGS
            .iter()
            .any(|end| lower.len() > end.len() && lower.ends_with(end))
}

/// A secret given on the command line: a `-c KEY=VALUE` (or `--config`) flag whose
/// key's last part names a secret (`model.gemini.api_key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretArgument {
    /// Which argument holds the value (0 is the program).
    pub index: usize,
    /// Where the value is within that argument, in bytes (never empty).
    pub value: std::ops::Range<usize>,
    /// The settings key it sets.
    pub key: String,
}

/// The `-c`/`--config` values among `args` (the program first) that set a secret,
/// as `-c KEY=VALUE`, `--config KEY=VALUE`, `--config=KEY=VALUE`, `-cKEY=VALUE` or
/// `-c=KEY=VALUE`. Arguments after `--` are not flags.
///
/// ```
/// # use troupe_engine::secret_names::secret_config_arguments;
/// let args: Vec<&[u8]> = vec![b"troupe", b"-c", b"model.gemini.api_key=k1", b"-p", b"hi"];
/// let found = secret_config_arguments(&args);
/// assert_eq!((found[0].index, found[0].value.clone()), (2, 21..23));
/// ```
pub fn secret_config_arguments(args: &[&[u8]]) -> Vec<SecretArgument> {
    let mut found = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let arg = args[i];
        if arg == b"--" {
            break;
        }
        let (index, offset) = if arg == b"-c" || arg == b"--config" {
            i += 1;
            (i, 0)
        } else if arg.starts_with(b"--config=") {
            (i, "--config=".len())
        } else if arg.starts_with(b"-c=") {
            (i, "-c=".len())
        } else if arg.starts_with(b"-c") {
            (i, "-c".len())
        } else {
            i += 1;
            continue;
        };
        if let Some(secret) = args.get(index).and_then(|a| secret_assignment(a, offset)) {
            found.push(SecretArgument { index, ..secret });
        }
        i = index + 1;
    }
    found
}

/// `KEY=VALUE` from `offset` on, when the key names a secret and the value is set.
fn secret_assignment(arg: &[u8], offset: usize) -> Option<SecretArgument> {
    let text = arg.get(offset..)?;
    let eq = text.iter().position(|b| *b == b'=')?;
    let key = String::from_utf8_lossy(&text[..eq]).trim().to_string();
    let last = key.rsplit('.').next().unwrap_or("");
    let value = offset + eq + 1..arg.len();
    (is_secret_name(last) && !value.is_empty()).then_some(SecretArgument {
        index: 0,
        value,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_file_names() {
        for name in [
            ".env",
            ".env.local",
            ".env.production",
            ".ENV",
            ".env.",
            ".env:stream",
            ".envrc",
            ".netrc",
            ".npmrc",
            ".git-credentials",
            "id_rsa",
            "id_ed25519",
            "gha-creds-1234.json",
            "server.pem",
            "tls.key",
        ] {
            assert!(is_secret_file_name(name), "{name}");
        }
        for name in [
            "env",
            "env.rs",
            ".environment",
            "id_rsa.pub",
            ".pem",
            "keys.rs",
            "Cargo.toml",
            "",
        ] {
            assert!(!is_secret_file_name(name), "{name}");
        }
    }
}
