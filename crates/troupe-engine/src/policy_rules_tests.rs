use super::*;
use crate::stable_json::command_prefix_pattern;
use serde_json::json;

fn rule(tool: &str, decision: RuleDecision, tier: Tier, own: u32) -> PolicyRule {
    PolicyRule::new(tool, decision, tier.priority(own), "test")
}

fn prefix(p: &str, decision: RuleDecision, own: u32) -> PolicyRule {
    let mut r = rule(SHELL_TOOL, decision, Tier::User, own);
    r.args_pattern = Some(Regex::new(&command_prefix_pattern(p)).unwrap());
    r
}

fn check(
    rules: &PolicyRules,
    name: &str,
    server: Option<&str>,
    args: Value,
) -> Option<RuleDecision> {
    let call = PolicyCall {
        name,
        server,
        args: &args,
        mode: ApprovalMode::Default,
        interactive: false,
        annotations: None,
        subagent: None,
        aliases: &[],
    };
    rules.check(&call).map(|v| v.decision)
}

fn shell(rules: &PolicyRules, command: &str) -> Option<RuleDecision> {
    check(rules, SHELL_TOOL, None, json!({ "command": command }))
}

#[test]
fn highest_priority_wins_and_tiers_rank_first() {
    let rules = PolicyRules::new(vec![
        rule("read_file", RuleDecision::Allow, Tier::User, 900),
        rule("read_file", RuleDecision::Deny, Tier::Admin, 1),
    ]);
    assert_eq!(
        check(&rules, "read_file", None, json!({})),
        Some(RuleDecision::Deny)
    );
    assert_eq!(check(&rules, "glob", None, json!({})), None);
}

#[test]
fn a_prefix_allows_only_lines_whose_every_command_it_allows() {
    let rules = PolicyRules::new(vec![prefix("git", RuleDecision::Allow, 100)]);
    assert_eq!(shell(&rules, "git status"), Some(RuleDecision::Allow));
    assert_eq!(
        shell(&rules, "git status && git log"),
        Some(RuleDecision::Allow)
    );
    assert_eq!(shell(&rules, "git status && rm -rf x"), None);
    assert_eq!(shell(&rules, "gitk"), None);
    assert_eq!(
        shell(&rules, "git log > out.txt"),
        Some(RuleDecision::AskUser)
    );
}

#[test]
fn a_denied_command_denies_the_line_wherever_it_is() {
    let rules = PolicyRules::new(vec![
        prefix("git", RuleDecision::Allow, 100),
        prefix("rm", RuleDecision::Deny, 1),
    ]);
    assert_eq!(
        shell(&rules, "git status && rm -rf x"),
        Some(RuleDecision::Deny)
    );
    assert_eq!(shell(&rules, "ls; rm -rf x"), Some(RuleDecision::Deny));
    assert_eq!(
        shell(&rules, "bash -c 'rm -rf x'"),
        Some(RuleDecision::Deny)
    );
    assert_eq!(shell(&rules, "ls"), None);
}

#[test]
fn mcp_names_in_every_form() {
    let mut short = rule("echo", RuleDecision::Deny, Tier::User, 1);
    short.mcp_name = Some("fx".into());
    let rules = PolicyRules::new(vec![short]);
    assert_eq!(
        check(&rules, "mcp_fx_echo", Some("fx"), json!({})),
        Some(RuleDecision::Deny)
    );
    assert_eq!(check(&rules, "mcp_ev_echo", Some("ev"), json!({})), None);
    assert_eq!(check(&rules, "echo", None, json!({})), None);
    let rules = PolicyRules::new(vec![rule("mcp_fx_*", RuleDecision::Allow, Tier::User, 1)]);
    assert_eq!(
        check(&rules, "mcp_fx_peek", Some("fx"), json!({})),
        Some(RuleDecision::Allow)
    );
    assert_eq!(check(&rules, "mcp_fx_peek", None, json!({})), None);
    let rules = PolicyRules::new(vec![rule("mcp_*", RuleDecision::Allow, Tier::User, 1)]);
    assert_eq!(
        check(&rules, "mcp_ev_x", Some("ev"), json!({})),
        Some(RuleDecision::Allow)
    );
    assert_eq!(check(&rules, "read_file", None, json!({})), None);
}

#[test]
fn modes_interactive_and_args_patterns() {
    let mut r = rule("write_file", RuleDecision::Deny, Tier::User, 1);
    r.modes = vec![ApprovalMode::Yolo];
    let mut i = rule("glob", RuleDecision::AskUser, Tier::User, 1);
    i.interactive = Some(true);
    let mut a = rule("read_file", RuleDecision::Deny, Tier::User, 1);
    a.args_pattern = Some(Regex::new("\\x00\"file_path\":\"[^\"]*\\.env\"\\x00").unwrap());
    let rules = PolicyRules::new(vec![r, i, a]);
    assert_eq!(check(&rules, "write_file", None, json!({})), None);
    assert_eq!(check(&rules, "glob", None, json!({})), None);
    assert_eq!(
        check(&rules, "read_file", None, json!({"file_path": "a/.env"})),
        Some(RuleDecision::Deny)
    );
    assert_eq!(
        check(&rules, "read_file", None, json!({"file_path": "a/.envrc"})),
        None
    );
    let call = PolicyCall {
        name: "write_file",
        server: None,
        args: &json!({}),
        mode: ApprovalMode::Yolo,
        interactive: true,
        annotations: None,
        subagent: None,
        aliases: &[],
    };
    assert_eq!(
        rules.check(&call).map(|v| v.refusal()),
        Some("Tool execution denied by policy.".into())
    );
}

/// What gemini-cli 0.61's engine answers for these lines with the same two user rules
/// (its default policies loaded too), where Troupe's rules decide; `None` where
/// gemini-cli's answer came from its default tier (Troupe's approval mode answers
/// those the same: asked in `default`, run in `yolo`).
#[test]
fn shell_lines_as_gemini_cli_decides_them() {
    let mut deny = prefix("rm", RuleDecision::Deny, 1);
    deny.deny_message = Some("no rm".into());
    let rules = PolicyRules::new(vec![prefix("git", RuleDecision::Allow, 100), deny]);
    let cases = [
        (
            "git status",
            Some(RuleDecision::Allow),
            Some(RuleDecision::Allow),
        ),
        (
            "git status && rm -rf x",
            Some(RuleDecision::Deny),
            Some(RuleDecision::Deny),
        ),
        ("git status && mkdir y", None, None),
        (
            "ls; rm -rf x",
            Some(RuleDecision::Deny),
            Some(RuleDecision::Deny),
        ),
        (
            "git log > out.txt",
            Some(RuleDecision::AskUser),
            Some(RuleDecision::Allow),
        ),
        (
            "bash -c \"rm -rf x\"",
            Some(RuleDecision::Deny),
            Some(RuleDecision::Deny),
        ),
        ("gitk", None, None),
    ];
    for (command, default, yolo) in cases {
        for (mode, want) in [(ApprovalMode::Default, default), (ApprovalMode::Yolo, yolo)] {
            let args = json!({ "command": command });
            let call = PolicyCall {
                name: SHELL_TOOL,
                server: None,
                args: &args,
                mode,
                interactive: true,
                annotations: None,
                subagent: None,
                aliases: &[],
            };
            let got = rules.check(&call);
            assert_eq!(
                got.as_ref().map(|v| v.decision),
                want,
                "{command} in {mode:?}"
            );
            if want == Some(RuleDecision::Deny) {
                assert_eq!(
                    got.unwrap().refusal(),
                    "Tool execution denied by policy. no rm"
                );
            }
        }
    }
}
