//! A subagent's limits: its turns, its time, the tree's token budget, each followed by
//! gemini-cli's one grace turn to report; the depth of the tree and the calls one
//! answer may start; an unknown agent.

use serde_json::json;

use super::{answer, complete, declared, invoke, parent_results, parts, run, seen, tool};
use crate::common::loopback::{Loopback, Reply};
use crate::common::{stderr, Scratch};

/// An agent file `stepper` with the given extra front matter lines.
fn stepper(s: &Scratch, front: &str) {
    s.write(
        ".troupe/agents/stepper.md",
        &format!("---\nname: stepper\ndescription: Steps through a task.\ntools:\n  - list_directory\n{front}---\nYou step through tasks.\n"),
    );
}

fn report(text: &str) -> Reply {
    tool("complete_task", json!({"result": text}))
}

/// A parent that starts one `agent` with `prompt` and then says `done`.
fn parent_or(seen: &super::Seen, agent: &str) -> Option<Reply> {
    if !seen.first.contains("PARENT-TASK") {
        return None;
    }
    Some(match seen.rounds {
        0 => parts(json!([invoke(agent, "CHILD: step")])),
        _ => answer("done"),
    })
}

/// The requests of the child, in order.
fn child_requests(server: &Loopback) -> Vec<super::Seen> {
    let all = server.requests().into_iter().map(|r| seen(&r.body));
    all.filter(|s| s.first.starts_with("CHILD")).collect()
}

#[test]
fn a_child_past_its_max_turns_gets_one_grace_turn_and_its_report_counts_as_goal() {
    let s = Scratch::new();
    stepper(&s, "max_turns: 1\n");
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "stepper").unwrap_or_else(|| {
            match seen.raw.contains("maximum number of turns") {
                false => tool("list_directory", json!({"dir_path": "."})),
                true => report("recovered after the limit"),
            }
        })
    });
    let out = run(&s, &server, "PARENT-TASK: one step", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let grace = &child_requests(&server)[1];
    assert!(grace.raw.contains("You have exceeded the maximum number of turns. You have one final chance to complete the task with a short grace period. You MUST call `complete_task` immediately"), "{}", grace.raw);
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains("Subagent 'stepper' finished.\\nTermination Reason: GOAL\\nResult:\\nrecovered after the limit"), "{results}");
}

#[test]
fn a_child_that_misses_its_grace_turn_ends_max_turns_with_gemini_cli_s_result() {
    let s = Scratch::new();
    stepper(&s, "max_turns: 1\n");
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "stepper")
            .unwrap_or_else(|| tool("list_directory", json!({"dir_path": "."})))
    });
    let out = run(&s, &server, "PARENT-TASK: never reports", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains("Subagent 'stepper' finished.\\nTermination Reason: MAX_TURNS\\nResult:\\nAgent reached max turns limit (1)."), "{results}");
    // The grace turn asked the model once: no second round of tools.
    assert_eq!(child_requests(&server).len(), 2);
}

#[test]
fn a_child_past_its_time_limit_is_stopped_and_reports_in_its_grace_turn() {
    let s = Scratch::new();
    // 0.02 minutes: 1.2 s; the child's first answer takes far longer.
    stepper(&s, "timeout_mins: 0.02\n");
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "stepper").unwrap_or_else(|| {
            match seen.raw.contains("exceeded the time limit") {
                false => tool("list_directory", json!({"dir_path": "."}))
                    .delayed(std::time::Duration::from_secs(30)),
                true => report("partial findings"),
            }
        })
    });
    let out = run(&s, &server, "PARENT-TASK: slow child", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(
        results.contains("Termination Reason: GOAL\\nResult:\\npartial findings"),
        "{results}"
    );
    assert!(child_requests(&server)
        .iter()
        .any(|c| c.raw.contains("You have exceeded the time limit.")));
}

#[test]
fn a_child_that_stops_calling_tools_without_reporting_ends_error_no_complete_task_call() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "generalist").unwrap_or_else(|| answer("I think I am done."))
    });
    let out = run(&s, &server, "PARENT-TASK: chatty child", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let children = child_requests(&server);
    assert!(children[1]
        .raw
        .contains("You have stopped calling tools without finishing."));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains("Termination Reason: ERROR_NO_COMPLETE_TASK_CALL\\nResult:\\nAgent stopped calling tools but did not call 'complete_task'."), "{results}");
}

#[test]
fn a_spent_token_budget_gives_the_child_its_grace_turn_naming_the_setting() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "generalist").unwrap_or_else(|| {
            match seen.raw.contains("agents.token_budget") {
                false => tool("list_directory", json!({"dir_path": "."})),
                true => complete("within budget"),
            }
        })
    });
    // Each answer counts 110 tokens: the first one spends the budget.
    let out = run(
        &s,
        &server,
        "PARENT-TASK: budget",
        &["-o", "json", "-c", "agents.token_budget=50"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let grace = child_requests(&server)
        .into_iter()
        .find(|c| c.raw.contains("agents.token_budget = 50"));
    assert!(grace.is_some(), "no grace turn named the budget");
    let results = parent_results(&server, "PARENT-TASK");
    assert!(
        results.contains(&super::goal_text("within budget")),
        "{results}"
    );
}

#[test]
fn a_child_cannot_start_children_unless_max_depth_allows_it() {
    for (depth, offered) in [("1", false), ("2", true)] {
        let s = Scratch::new();
        let server = Loopback::routed(|body| {
            let seen = seen(body);
            parent_or(&seen, "generalist").unwrap_or_else(|| match seen.rounds {
                0 => parts(json!([invoke("generalist", "GRANDCHILD: hello")])),
                _ => complete("tried"),
            })
        });
        let out = run(
            &s,
            &server,
            "PARENT-TASK: depth",
            &["-o", "json", "-c", &format!("agents.max_depth={depth}")],
        );
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        let child = &child_requests(&server)[0];
        assert_eq!(
            declared(&serde_json::from_str(&child.raw).expect("body"))
                .contains(&"invoke_agent".to_string()),
            offered,
            "depth {depth}"
        );
        assert!(declared(&serde_json::from_str(&child.raw).expect("body"))
            .contains(&"complete_task".to_string()));
        let second = &child_requests(&server)[1];
        match offered {
            false => assert!(
                second.raw.contains(
                    "Unauthorized tool call: 'invoke_agent' is not available to this agent."
                ),
                "{}",
                second.raw
            ),
            true => assert!(
                second.raw.contains("Subagent 'generalist' finished."),
                "{}",
                second.raw
            ),
        }
    }
}

#[test]
fn calls_past_max_per_turn_are_answered_with_the_setting_and_the_rest_run() {
    let s = Scratch::new();
    let server = Loopback::routed(move |body| {
        let seen = seen(body);
        match seen.first.as_str() {
            f if f.contains("PARENT-TASK") && seen.rounds == 0 => parts(json!([
                invoke("generalist", "CHILD-1: one"),
                invoke("generalist", "CHILD-2: two"),
            ])),
            f if f.contains("PARENT-TASK") => answer("done"),
            _ => complete("ran"),
        }
    });
    let out = run(
        &s,
        &server,
        "PARENT-TASK: two at most one",
        &["-o", "json", "-c", "agents.max_per_turn=1"],
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains(&super::goal_text("ran")), "{results}");
    assert!(results.contains("agents.max_per_turn = 1"), "{results}");
    assert_eq!(child_requests(&server).len(), 1);
}

#[test]
fn an_unknown_agent_answers_gemini_cli_s_not_found() {
    let s = Scratch::new();
    let server = Loopback::routed(|body| {
        let seen = seen(body);
        parent_or(&seen, "nope").unwrap_or_else(|| answer("unexpected"))
    });
    let out = run(&s, &server, "PARENT-TASK: unknown", &["-o", "json"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let results = parent_results(&server, "PARENT-TASK");
    assert!(results.contains("Subagent 'nope' not found."), "{results}");
}
