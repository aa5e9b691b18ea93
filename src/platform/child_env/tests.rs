use super::*;
use crate::engine_tests::secret_names::TABLE;

#[test]
fn default_policy_follows_is_secret_name() {
    let policy = ChildEnvPolicy::default();
    for (name, secret) in TABLE {
        assert_eq!(policy.allows(name), !secret, "{name}");
    }
}

#[test]
fn pass_list_exact_and_glob() {
    let policy = ChildEnvPolicy::new(vec![
        "GH_TOKEN".into(),
        "MY_APP_*".into(),
        String::new(),
        "A*B".into(),
    ]);
    assert_eq!(policy.pass(), ["GH_TOKEN", "MY_APP_*", "A*B"]);
    // Exact entry.
    assert!(policy.allows("GH_TOKEN"));
    assert!(!policy.allows("gh_token"), "pass-list is case-sensitive");
    assert!(!policy.allows("GH_TOKEN2_TOKEN"));
    assert!(!policy.allows("GITHUB_TOKEN"));
    // Glob entry.
    assert!(policy.allows("MY_APP_API_KEY"));
    assert!(policy.allows("MY_APP_"));
    assert!(
        !policy.is_passed("MY_APP"),
        "prefix includes the underscore"
    );
    assert!(!policy.allows("my_app_api_key"));
    assert!(!policy.allows("OTHER_MY_APP_TOKEN"));
    // A `*` that is not trailing is literal.
    assert!(policy.is_passed("A*B"));
    assert!(!policy.is_passed("AxB"));
    // Non-secret names pass regardless.
    assert!(policy.allows("PATH"));
}

#[test]
fn lone_star_passes_everything() {
    let policy = ChildEnvPolicy::new(vec!["*".into()]);
    assert!(policy.allows("OPENAI_API_KEY"));
    assert!(policy.allows("anything"));
}

fn os_pairs(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

#[test]
fn filtered_keeps_order_and_values() {
    let policy = ChildEnvPolicy::new(vec!["KEEP_TOKEN".into()]);
    let input = os_pairs(&[
        ("PATH", "/usr/bin"),
        ("OPENAI_API_KEY", "sk-xxx"),
        ("KEEP_TOKEN", "kept"),
        ("HOME", "/home/u"),
        ("AWS_SECRET_ACCESS_KEY", "abc"),
        ("TOKENIZERS_PARALLELISM", "false"),
    ]);
    let out = policy.filtered(input);
    assert_eq!(
        out,
        os_pairs(&[
            ("PATH", "/usr/bin"),
            ("KEEP_TOKEN", "kept"),
            ("HOME", "/home/u"),
            ("TOKENIZERS_PARALLELISM", "false"),
        ])
    );
}

#[test]
fn filtered_accepts_an_iterator() {
    let policy = ChildEnvPolicy::default();
    // A lazy adaptor, as with `std::env::vars_os()`.
    let vars = os_pairs(&[("A", "1"), ("B_TOKEN", "2"), ("C", "3")])
        .into_iter()
        .rev();
    assert_eq!(policy.filtered(vars), os_pairs(&[("C", "3"), ("A", "1")]));
}

#[test]
fn removed_from_is_sorted_and_deduplicated() {
    let policy = ChildEnvPolicy::new(vec!["MY_APP_*".into()]);
    let names = ["Z_TOKEN", "PATH", "A_API_KEY", "Z_TOKEN", "MY_APP_TOKEN"].map(OsString::from);
    assert_eq!(policy.removed_from(names), ["A_API_KEY", "Z_TOKEN"]);
}

#[test]
fn removed_names_reads_the_process_env_without_panicking() {
    // The process env is shared with other tests; only check consistency.
    let policy = ChildEnvPolicy::default();
    for name in policy.removed_names() {
        assert!(is_secret_name(&name), "{name}");
    }
}

#[cfg(unix)]
#[test]
fn non_utf8_names_use_lossy_check_and_ignore_pass_list() {
    use std::os::unix::ffi::OsStringExt;
    let secret = OsString::from_vec(b"BAD\xffNAME_TOKEN".to_vec());
    let plain = OsString::from_vec(b"BAD\xffNAME".to_vec());
    let policy = ChildEnvPolicy::new(vec!["*".into()]);
    let input = vec![
        (secret.clone(), OsString::from("v")),
        (plain.clone(), OsString::from("w")),
    ];
    let out = policy.filtered(input);
    assert_eq!(out, vec![(plain, OsString::from("w"))]);
    assert_eq!(
        policy.removed_from([secret]),
        ["BAD\u{fffd}NAME_TOKEN".to_string()]
    );
}

#[cfg(unix)]
#[test]
fn apply_std_clears_explicit_and_inherits_filtered() {
    // Only inspects the Command; the real spawn test is in tests/spawn.rs.
    let mut cmd = Command::new("true");
    cmd.env("SET_BEFORE", "1");
    ChildEnvPolicy::default().apply_std(&mut cmd);
    let names: Vec<OsString> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
    assert!(!names.iter().any(|k| k == "SET_BEFORE"));
    for name in &names {
        assert!(!is_secret_name(&name.to_string_lossy()), "{name:?}");
    }
}
