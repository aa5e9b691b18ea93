//! Real spawn test for `ChildEnvPolicy::apply_std`. Kept alone in its own
//! test binary because it mutates the process environment.

#![cfg(unix)]

use std::process::Command;
use troupe::platform::child_env::ChildEnvPolicy;

#[test]
fn apply_std_hides_secrets_from_a_real_child() {
    // Only test in this binary, so no other thread reads the env concurrently.
    std::env::set_var("TROUPE_PROTO_TEST_TOKEN", "x");
    std::env::set_var("TROUPE_PROTO_TEST_PLAIN", "y");
    std::env::set_var("TROUPE_PROTO_PASSED_API_KEY", "z");

    let policy = ChildEnvPolicy::new(vec!["TROUPE_PROTO_PASSED_*".into()]);
    assert!(policy
        .removed_names()
        .contains(&"TROUPE_PROTO_TEST_TOKEN".to_string()));

    let mut cmd = Command::new("/usr/bin/env");
    policy.apply_std(&mut cmd);
    cmd.env("TROUPE_PROTO_EXPLICIT_TOKEN", "set-after");
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!("spawning /usr/bin/env failed: {e}"),
    };
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();

    assert!(lines.contains(&"TROUPE_PROTO_TEST_PLAIN=y"), "{stdout}");
    assert!(lines.contains(&"TROUPE_PROTO_PASSED_API_KEY=z"), "{stdout}");
    assert!(
        lines.contains(&"TROUPE_PROTO_EXPLICIT_TOKEN=set-after"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("TROUPE_PROTO_TEST_TOKEN"),
        "secret leaked: {stdout}"
    );
    assert!(lines.iter().any(|l| l.starts_with("PATH=")), "{stdout}");
}
