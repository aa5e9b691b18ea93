"""The self-test of .ci/layers (`python3 .ci/layers --self-test`; every normal run does
it first too): the checker on small inline crates, with each spelling it must catch and
code it must leave alone."""
import os
import tempfile


SELF_TESTS = [
    # (name, files, the problems expected: (file, line, word in the message))
    ("clean", {
        "lib.rs": "pub mod protocol;\npub mod engine;\npub mod settings;\npub mod platform;\n",
        "protocol.rs": "pub use troupe_protocol::*;\n",
        "engine/mod.rs": "pub use troupe_engine::*;\n",
        "settings/mod.rs": "use crate::{engine::text, protocol::{A, B}};\nuse super::engine::x;\n"
                           "const S: &str = \"crate::platform::d\";\n/* crate::platform::e */\n"
                           "// use crate::platform::f;\nfn f() { crate::engine::g(); }\n",
        "platform/mod.rs": "use crate::settings::Settings;\n",
    }, []),
    ("grouped", {
        "lib.rs": "pub mod engine;\npub mod settings;\npub mod platform;\n",
        "engine/mod.rs": "",
        "platform.rs": "",
        "settings/mod.rs": "use crate::{engine::text,\n    platform::{child_env, sandbox}};\n",
    }, [("settings/mod.rs", 1, "platform")]),
    ("super", {
        "lib.rs": "pub mod settings;\npub mod platform;\n",
        "platform.rs": "",
        "settings/mod.rs": "mod merge;\nuse super::platform::x;\nmod inner {\n"
                           "    fn f() { super::super::platform::g(); }\n}\n",
        "settings/merge.rs": "fn f() -> super::super::platform::T { todo() }\n",
    }, [("settings/mod.rs", 2, "platform"), ("settings/mod.rs", 4, "platform"),
        ("settings/merge.rs", 1, "platform")]),
    ("alias", {
        "lib.rs": "pub mod settings;\npub mod platform;\n",
        "platform.rs": "",
        "settings.rs": "use crate as root;\nuse crate::{self as top};\n"
                       "fn f() { root::platform::run(); top::platform::go(); }\n",
    }, [("settings.rs", 3, "platform")]),
    ("strings", {
        "lib.rs": "pub mod settings;\npub mod platform;\n",
        "platform.rs": "",
        "settings.rs": "const U: &str = \"http://example.com\"; use crate::platform::a;\n"
                       "const R: &str = r#\"say \"hi\" // \"#; use crate::platform::b;\n"
                       "const Q: char = '\"'; use crate::platform::c;\n"
                       "const E: &str = \"\\\"// \"; fn f<'a>(x: &'a str) { crate::platform::d(); }\n"
                       "#[rtype(result = \"crate::platform::T\")]\nstruct M;\n",
    }, [("settings.rs", 1, "platform"), ("settings.rs", 2, "platform"),
        ("settings.rs", 3, "platform"), ("settings.rs", 4, "platform"),
        ("settings.rs", 5, "platform")]),
    ("test files", {
        "lib.rs": "pub mod settings;\npub mod platform;\n",
        "platform.rs": "",
        "settings/mod.rs": "mod merge_tests;\n#[cfg(test)]\nmod tests;\n"
                           "#[cfg(test)]\n#[path = \"other_tests.rs\"]\nmod other;\n"
                           "#[path = \"named_tests.rs\"]\nmod named;\n"
                           "#[cfg(test)]\nmod inline { use crate::platform::z; }\n",
        "settings/merge_tests.rs": "use crate::platform::x;\n",
        "settings/tests.rs": "use crate::platform::y;\n",
        "settings/other_tests.rs": "use crate::platform::y;\n",
        "settings/named_tests.rs": "\nuse crate::platform::w;\n",
    }, [("settings/merge_tests.rs", 1, "platform"), ("settings/named_tests.rs", 2, "platform")]),
]

ENGINE_SELF_TESTS = [
    ("engine clean", {
        "lib.rs": "use std::{fmt, path::Path};\nuse troupe_protocol as protocol;\n"
                  "const S: &str = \"std::fs\";\n#[cfg(test)]\nmod tests { use std::fs; }\n",
    }, []),
    ("engine I/O", {
        "lib.rs": "use std::{fs, env};\nuse std::{self as s};\nfn f() { s::process::exit(0) }\n"
                  "fn g(p: &Path) -> bool { p.exists() }\nfn h() { ::tokio::fs::read(\"x\"); }\n",
    }, [("lib.rs", 1, "std::fs"), ("lib.rs", 1, "std::env"), ("lib.rs", 3, "std::process"),
        ("lib.rs", 4, "exists"), ("lib.rs", 5, "tokio::fs")]),
]


def run_case(check, files, expected):
    with tempfile.TemporaryDirectory() as tmp:
        for rel, content in files.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)
        problems = check(tmp)
    missing = [e for e in expected
               if not any(p.startswith(f"{e[0]}:{e[1]}:") and e[2] in p for p in problems)]
    extra = [p for p in problems
             if not any(p.startswith(f"{e[0]}:{e[1]}:") and e[2] in p for e in expected)]
    return missing, extra


def self_test(check_layers, check_engine_io, check_crates):
    """The checker on small inline crates: each spelling it must catch, and none of the
    code it must leave alone. Answers the failures."""
    failures = []
    for check, cases in ((check_layers, SELF_TESTS), (check_engine_io, ENGINE_SELF_TESTS)):
        for name, files, expected in cases:
            missing, extra = run_case(check, files, expected)
            failures += [f"self-test `{name}`: not caught: {m}" for m in missing]
            failures += [f"self-test `{name}`: wrongly reported: {e}" for e in extra]
    metadata = {"packages": [
        {"name": "troupe", "dependencies": [{"name": "troupe-engine"}]},
        {"name": "troupe-protocol", "dependencies": [{"name": "serde"}]},
        {"name": "troupe-engine", "dependencies": [{"name": "troupe-protocol"},
                                                   {"name": "troupe"}]},
    ]}
    if check_crates(metadata) != ["troupe-engine: depends on the workspace crate `troupe` "
                                  "(it may depend on troupe-protocol)"]:
        failures.append(f"self-test `crates`: {check_crates(metadata)}")
    return failures
