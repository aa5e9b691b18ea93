//! Issue 42: inside the allow-listed world, real work still works — `cargo build` and
//! `cargo test` of a small crate, `python3 -m pytest` in a virtualenv inside the
//! workspace, `npm test` of a small package, `git commit` (in world.rs) — each run by
//! `troupe --yolo` (workspace-write, the default sandbox) as a model would run it.
//! The test's HOME is its scratch dir, so the machine's toolchains are shown through
//! `sandbox.readable_roots`, as a user whose toolchains live elsewhere would.

use super::*;

/// `-c sandbox.readable_roots=[…]` for the toolchains of the user running the tests.
fn toolchain_args() -> Vec<String> {
    let home = std::env::var("HOME").unwrap_or_default();
    let roots: Vec<String> = [".cargo", ".rustup", ".pyenv"]
        .iter()
        .map(|r| format!("{home}/{r}"))
        .filter(|p| Path::new(p).exists())
        .map(|p| format!("\"{p}\""))
        .collect();
    vec![
        "--yolo".into(),
        "-c".into(),
        format!("sandbox.readable_roots=[{}]", roots.join(", ")),
    ]
}

fn toolchain_env() -> Vec<(String, String)> {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut env = Vec::new();
    for (var, rel) in [
        ("CARGO_HOME", ".cargo"),
        ("RUSTUP_HOME", ".rustup"),
        ("PYENV_ROOT", ".pyenv"),
    ] {
        let value = std::env::var(var).unwrap_or_else(|_| format!("{home}/{rel}"));
        env.push((var.to_string(), value));
    }
    env
}

fn run_work(fx: &Fixture, commands: &[&str]) -> Vec<String> {
    let args = toolchain_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = toolchain_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (r, out) = fx.run(commands, &args, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    r
}

#[test]
fn cargo_builds_and_tests_a_small_crate() {
    require_landlock!();
    let fx = Fixture::new();
    fx.s.write(
        "crate/Cargo.toml",
        "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    fx.s.write(
        "crate/src/lib.rs",
        "pub fn two() -> u32 { 2 }\n#[test]\nfn it_is_two() { assert_eq!(two(), 2); }\n",
    );
    let r = run_work(&fx, &["cd crate && cargo build --offline 2>&1 && cargo test --offline 2>&1 | grep 'test result' && echo ALL-DONE"]);
    assert!(
        r[0].contains("test result: ok. 1 passed") && r[0].contains("ALL-DONE"),
        "{}",
        r[0]
    );
    assert!(fx.s.ws().join("crate/target").exists());
}

#[test]
fn pytest_runs_in_a_virtualenv_inside_the_workspace() {
    require_landlock!();
    let wheels = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-wheels");
    assert!(
        std::fs::read_dir(&wheels).is_ok_and(|mut d| d.next().is_some()),
        "pytest's wheels are missing from {}: run the test command (bash .ci/test), which downloads them",
        wheels.display()
    );
    let fx = Fixture::new();
    fx.s.write(
        "proj/test_sum.py",
        "def test_sum():\n    assert sum([2, 3]) == 5\n",
    );
    // The virtualenv is made inside the sandbox too, from the local wheels.
    let command = format!(
        "cd proj && python3 -m venv .venv && .venv/bin/pip install -q --no-index --find-links {} pytest 2>&1 | tail -2; .venv/bin/python -m pytest -q 2>&1 | tail -3",
        wheels.display()
    );
    let args = toolchain_args();
    let mut args: Vec<String> = args;
    let last = args.pop().unwrap_or_default();
    args.push(last.replace('[', &format!("[\"{}\", ", wheels.display())));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = toolchain_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (r, out) = fx.run(&[&command], &args, &env);
    assert!(r[0].contains("1 passed"), "{}\n{}", r[0], stderr(&out));
}

#[test]
fn npm_test_runs_a_small_package() {
    require_landlock!();
    let fx = Fixture::new();
    fx.s.write("pkg/package.json", "{\"name\": \"small\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test.js\"}}\n");
    fx.s.write("pkg/test.js", "const assert = require('assert');\nassert.strictEqual(2 + 3, 5);\nconsole.log('NODE-TESTS-PASSED');\n");
    let r = run_work(&fx, &["cd pkg && npm test 2>&1; echo exit=$?"]);
    assert!(
        r[0].contains("NODE-TESTS-PASSED") && r[0].contains("exit=0"),
        "{}",
        r[0]
    );
}
