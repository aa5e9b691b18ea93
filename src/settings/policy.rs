//! gemini-cli's policy files: which are loaded, in which tier, and their `[[rule]]`
//! tables checked and turned into [`PolicyRule`]s (the matching is
//! `engine::policy_rules`'s). Tiers, lowest first: workspace (not loaded: gemini-cli
//! 0.61 has workspace policies switched off), user (`~/.gemini/policies/` and
//! `~/.troupe/policies/`, or `policy.paths` / `--policy` instead of both), admin (the
//! system directory, `/etc/gemini-cli/policies`, and `policy.admin_paths` /
//! `--admin-policy`, which is ignored when the system directory holds policies). The
//! rules `tools.allowed` (`--allowed-tools`) and `mcp.allowed`
//! (`--allowed-mcp-server-names`) stand for are added at gemini-cli's priorities.

mod rule_table;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::engine::policy_rules::{PolicyRule, PolicyRules, RuleDecision, Tier, SHELL_TOOL};
use crate::engine::stable_json::command_prefix_pattern;
use crate::protocol::ApprovalMode;

/// `[policy]`: policy files and directories besides the default ones.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// User-tier files or directories (gemini-cli's `policyPaths`, `--policy`); when
    /// set, `~/.gemini/policies/` and `~/.troupe/policies/` are not read.
    pub paths: Vec<String>,
    /// Admin-tier files or directories (`adminPolicyPaths`, `--admin-policy`).
    pub admin_paths: Vec<String>,
}

/// The system policy directory (admin tier).
pub const SYSTEM_POLICIES_DIR: &str = "/etc/gemini-cli/policies";

/// `--allowed-tools` / `tools.allowed`: gemini-cli's `ALLOWED_TOOLS_FLAG_PRIORITY`.
const ALLOWED_TOOLS_PRIORITY: f64 = 4.3;
/// `mcp.allowed` / `--allowed-mcp-server-names`: `ALLOWED_MCP_SERVER_PRIORITY`.
const ALLOWED_MCP_SERVER_PRIORITY: f64 = 4.1;

/// The policy rules of a session, what they came from, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct LoadedPolicy {
    /// Every rule, highest priority first.
    pub rules: PolicyRules,
    /// The files read, with their tier.
    pub files: Vec<(Tier, PathBuf)>,
    /// gemini-cli's messages for files or rules that could not be used
    /// (`[USER] Policy file error in f.toml: …`), said once at start.
    pub errors: Vec<String>,
}

/// Where the policies are looked for.
#[derive(Debug, Clone)]
pub struct PolicyPlaces {
    /// The user's home (`~/.gemini/policies/`).
    pub home: PathBuf,
    /// Troupe's home (`~/.troupe/policies/`).
    pub troupe_home: PathBuf,
    /// The system policy directory.
    pub system_dir: PathBuf,
    /// What relative paths are relative to (the working directory).
    pub cwd: PathBuf,
}

/// Loads the policy files `settings` and `places` name, and adds the rules of
/// `tools.allowed` and `mcp.allowed`.
pub fn load(settings: &super::Settings, places: &PolicyPlaces) -> LoadedPolicy {
    let mut out = LoadedPolicy::default();
    let mut rules = Vec::new();
    for (tier, path) in policy_paths(settings, places, &mut out.errors) {
        for file in files_of(&path, tier, &mut out.errors) {
            match std::fs::read_to_string(&file) {
                Ok(text) => {
                    let name = file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let (found, errors) = rule_table::parse_file(&text, &name, tier);
                    rules.extend(found);
                    out.errors.extend(errors);
                    out.files.push((tier, file));
                }
                Err(e) => out.errors.push(rule_table::format_error(
                    tier,
                    &file.to_string_lossy(),
                    "Failed to read policy file",
                    Some(&e.to_string()),
                    None,
                )),
            }
        }
    }
    for ext in settings.loaded_extensions.active() {
        let dir = ext.dir("policies");
        if dir.is_dir() {
            rules.extend(extension_rules(&ext.name, &dir, &mut out));
        }
        rules.extend(excluded_commands(&ext.name, &ext.manifest.exclude_tools));
    }
    rules.extend(allowed_tools_rules(&settings.tools.allowed));
    rules.extend(allowed_server_rules(&settings.mcp.allowed));
    out.rules = PolicyRules::new(rules);
    out.errors.extend(unread_workspace_policies(places));
    for e in &out.errors {
        tracing::warn!("{e}");
    }
    out
}

/// The note for policy files in the workspace (`.gemini/policies/`,
/// `.troupe/policies/`), which gemini-cli 0.61 does not read and neither does Troupe,
/// trusted folder or not: said, so that a user does not think they apply.
fn unread_workspace_policies(places: &PolicyPlaces) -> Option<String> {
    let user_dirs = [places.home.join(".gemini"), places.troupe_home.clone()];
    let found: Vec<String> = [".gemini", ".troupe"]
        .iter()
        .filter(|dir| !user_dirs.contains(&places.cwd.join(dir)))
        .filter_map(|dir| {
            let files = toml_files(&places.cwd.join(dir).join("policies"))?;
            (!files.is_empty()).then(|| format!("{dir}/policies ({})", files.len()))
        })
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "Not reading the policy files of this workspace ({}): workspace policies are off, as in gemini-cli 0.61; put them in ~/.gemini/policies or pass --policy",
            found.join(", ")
        )
    })
}

/// The rules of an extension's `policies/*.toml` (gemini-cli's
/// `loadExtensionPolicies`): extension tier, without `allow` rules and rules for yolo
/// mode (an extension may only make Troupe ask or refuse more).
fn extension_rules(extension: &str, dir: &Path, out: &mut LoadedPolicy) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    for file in files_of(dir, Tier::Extension, &mut out.errors) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (found, errors) = rule_table::parse_file(&text, &name, Tier::Extension);
        out.errors.extend(errors);
        out.files.push((Tier::Extension, file));
        for mut rule in found {
            if rule.decision == RuleDecision::Allow || rule.modes.contains(&ApprovalMode::Yolo) {
                tracing::warn!(
                    "Extension \"{extension}\" contributed an allow or yolo-mode rule for tool \"{}\": ignored",
                    rule.tool_name
                );
                continue;
            }
            rule.source = match rule.source.strip_prefix("Extension: ") {
                Some(rest) => format!("Extension ({extension}): {rest}"),
                None => rule.source,
            };
            rules.push(rule);
        }
    }
    rules
}

/// The deny rules of an extension's `excludeTools` entries that name shell commands
/// (`run_shell_command(rm -rf)`: the commands starting so are refused). gemini-cli's
/// documentation promises this; 0.61 itself only drops tools named exactly (which
/// the tool registry does here too).
fn excluded_commands(extension: &str, exclude: &[String]) -> Vec<PolicyRule> {
    let source = format!("Extension ({extension}): excludeTools");
    exclude
        .iter()
        .filter_map(|entry| {
            let prefix = entry
                .strip_prefix(SHELL_TOOL)?
                .strip_prefix('(')?
                .strip_suffix(')')?;
            let priority = Tier::Extension.priority(999);
            let mut rule = PolicyRule::new(SHELL_TOOL, RuleDecision::Deny, priority, &source);
            rule.args_pattern = regex::Regex::new(&command_prefix_pattern(prefix)).ok();
            rule.deny_message = Some(format!(
                "The extension \"{extension}\" excludes `{prefix}` commands."
            ));
            Some(rule)
        })
        .collect()
}

/// The paths to read, each with its tier, highest tier first (as gemini-cli lists
/// them).
fn policy_paths(
    settings: &super::Settings,
    places: &PolicyPlaces,
    errors: &mut Vec<String>,
) -> Vec<(Tier, PathBuf)> {
    let resolve = |p: &String| {
        let p = super::expand_tilde(Path::new(p));
        places.cwd.join(p)
    };
    let mut paths = Vec::new();
    let system = &places.system_dir;
    let system_has_files = toml_files(system).is_some_and(|f| !f.is_empty());
    if system_has_files {
        match insecure(system) {
            None => paths.push((Tier::Admin, system.clone())),
            Some(reason) => errors.push(format!(
                "Security Warning: Skipping system policies from {}: {reason}",
                system.display()
            )),
        }
    }
    let admin = &settings.policy.admin_paths;
    if !admin.is_empty() && system_has_files {
        errors.push(format!(
            "Security Warning: Ignoring --admin-policy because system policies are already defined in {}",
            system.display()
        ));
    } else {
        paths.extend(admin.iter().map(|p| (Tier::Admin, resolve(p))));
    }
    if settings.policy.paths.is_empty() {
        paths.push((Tier::User, places.home.join(".gemini").join("policies")));
        paths.push((Tier::User, places.troupe_home.join("policies")));
    } else {
        paths.extend(
            settings
                .policy
                .paths
                .iter()
                .map(|p| (Tier::User, resolve(p))),
        );
    }
    paths
}

/// Why the system directory is not to be trusted (not owned by root, or writable by
/// group or others), in gemini-cli's words; `None` when it is.
fn insecure(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    let shown = dir.display();
    if meta.uid() != 0 {
        return Some(format!(
            "Directory '{shown}' is not owned by root (uid 0). Current uid: {}. To fix this, run: sudo chown root:root \"{shown}\"",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "Directory '{shown}' is writable by group or others (mode: {:o}). To fix this, run: sudo chmod g-w,o-w \"{shown}\"",
            meta.mode()
        ));
    }
    None
}

/// The `.toml` files of a directory, by name; `None` when it cannot be listed.
fn toml_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    Some(files)
}

/// A directory's `.toml` files, or the file itself when it is one; nothing for a
/// path that does not exist.
fn files_of(path: &Path, tier: Tier, errors: &mut Vec<String>) -> Vec<PathBuf> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => toml_files(path).unwrap_or_default(),
        Ok(m) if m.is_file() && path.extension().is_some_and(|x| x == "toml") => {
            vec![path.to_path_buf()]
        }
        Ok(_) => Vec::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            errors.push(rule_table::format_error(
                tier,
                &path.to_string_lossy(),
                "Failed to read policy path",
                Some(&e.to_string()),
                None,
            ));
            Vec::new()
        }
    }
}

/// gemini-cli's rules for `tools.allowed`: `tool` or `tool(args)` allowed; for the
/// shell tool the args are a command prefix, and every other command of the shell
/// tool is denied just below ("Narrowing Enforcement").
pub fn allowed_tools_rules(tools: &[String]) -> Vec<PolicyRule> {
    let source = "Settings (Tools Allowed)";
    let mut rules = Vec::new();
    let mut narrowed = false;
    for entry in tools {
        let (name, args) = match entry.split_once('(') {
            Some((n, rest)) if rest.ends_with(')') => (n, Some(&rest[..rest.len() - 1])),
            _ => (entry.as_str(), None),
        };
        let name = if name == "ShellTool" {
            SHELL_TOOL
        } else {
            name
        };
        let mut rule = PolicyRule::new(name, RuleDecision::Allow, ALLOWED_TOOLS_PRIORITY, source);
        if let (SHELL_TOOL, Some(prefix)) = (name, args) {
            narrowed = true;
            rule.args_pattern = regex::Regex::new(&command_prefix_pattern(prefix)).ok();
        }
        rules.push(rule);
    }
    if narrowed {
        rules.push(PolicyRule::new(
            SHELL_TOOL,
            RuleDecision::Deny,
            ALLOWED_TOOLS_PRIORITY - 0.01,
            &format!("{source} (Narrowing Enforcement)"),
        ));
    }
    rules
}

/// gemini-cli's rules for `mcp.allowed`: every tool of those servers allowed outside
/// plan mode.
pub fn allowed_server_rules(servers: &[String]) -> Vec<PolicyRule> {
    servers
        .iter()
        .map(|server| {
            let tool = match server.as_str() {
                "*" => "mcp_*".to_string(),
                s => format!("mcp_{s}_*"),
            };
            let mut rule = PolicyRule::new(
                &tool,
                RuleDecision::Allow,
                ALLOWED_MCP_SERVER_PRIORITY,
                "Settings (MCP Allowed)",
            );
            rule.mcp_name = Some(server.clone());
            rule.modes = vec![
                ApprovalMode::Default,
                ApprovalMode::AutoEdit,
                ApprovalMode::Yolo,
            ];
            rule
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(root: &Path) -> PolicyPlaces {
        PolicyPlaces {
            home: root.join("home"),
            troupe_home: root.join("home/.troupe"),
            system_dir: root.join("system"),
            cwd: root.to_path_buf(),
        }
    }

    fn settings(admin: &[&str]) -> crate::settings::Settings {
        let none = Path::new("/nonexistent");
        let list: Vec<String> = admin.iter().map(|a| format!("{a:?}")).collect();
        let flag = format!("policy.admin_paths=[{}]", list.join(","));
        crate::settings::load_with(none, none, &[], &[flag])
            .unwrap()
            .settings
    }

    #[test]
    fn a_system_directory_with_policies_shuts_out_admin_flags_and_must_be_roots() {
        let root = std::env::temp_dir().join(format!("troupe-policy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("system")).unwrap();
        let rule = "[[rule]]\ntoolName = \"glob\"\ndecision = \"deny\"\npriority = 1\n";
        std::fs::write(root.join("admin.toml"), rule).unwrap();
        // No system policies: --admin-policy loads in the admin tier.
        let loaded = load(&settings(&["admin.toml"]), &places(&root));
        assert_eq!(loaded.files.len(), 1, "{:?}", loaded.errors);
        assert_eq!(loaded.rules.rules()[0].source, "Admin: admin.toml");
        assert!((loaded.rules.rules()[0].priority - 5.001).abs() < 1e-9);
        // A system policy in a directory others can write: the flag is ignored, and
        // the directory too (whoever owns it).
        std::fs::write(root.join("system/s.toml"), rule).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join("system"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let loaded = load(&settings(&["admin.toml"]), &places(&root));
        assert!(loaded.files.is_empty());
        let said = loaded.errors.join("\n");
        assert!(said.contains("Security Warning: Ignoring --admin-policy because system policies are already defined in"), "{said}");
        assert!(
            said.contains("Security Warning: Skipping system policies from"),
            "{said}"
        );
        assert!(
            said.contains("is not owned by root (uid 0)")
                || said.contains("is writable by group or others (mode: 40777)"),
            "{said}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
